import { RemovalPolicy } from 'aws-cdk-lib';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { stackKey } from './stack-key';

/** Options of {@link encryptedLogGroup}. */
export interface EncryptedLogGroupOptions {
  /** Construct id of the log group, in `scope` (construct ids are a contract: keep them stable). */
  readonly groupId: string;
  /**
   * How long the log events are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly retention?: logs.RetentionDays;
  /**
   * What happens to the log group when the stack is deleted (the key is always retained).
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** A CloudWatch Logs log group and the customer-managed KMS key that encrypts it. */
export interface EncryptedLogGroup {
  /** The stack's key ({@link stackKey}). */
  readonly key: kms.Key;
  readonly logGroup: logs.LogGroup;
}

/**
 * Creates a log group encrypted at rest with the stack's customer-managed KMS key
 * ({@link stackKey}: rotation on; its policy lets CloudWatch Logs of this region use it for this
 * account's log groups only).
 *
 * @param scope - the construct that owns the log group
 * @param options - id, retention, removal policy
 * @returns the key and the log group
 */
export function encryptedLogGroup(scope: Construct, options: EncryptedLogGroupOptions): EncryptedLogGroup {
  const key = stackKey(scope);
  const logGroup = new logs.LogGroup(scope, options.groupId, {
    retention: options.retention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy: options.removalPolicy ?? RemovalPolicy.RETAIN,
    encryptionKey: key,
  });
  return { key, logGroup };
}
