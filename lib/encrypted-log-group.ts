import { Aws, RemovalPolicy } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/** Options of {@link encryptedLogGroup}. */
export interface EncryptedLogGroupOptions {
  /** Construct id of the key, in `scope` (construct ids are a contract: keep them stable). */
  readonly keyId: string;
  /** Construct id of the log group, in `scope`. */
  readonly groupId: string;
  /** The key's description: what it encrypts. */
  readonly description: string;
  /**
   * How long the log events are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly retention?: logs.RetentionDays;
  /**
   * What happens to the key and the log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly removalPolicy?: RemovalPolicy;
}

/** A CloudWatch Logs log group and the customer-managed KMS key that encrypts it. */
export interface EncryptedLogGroup {
  readonly key: kms.Key;
  readonly logGroup: logs.LogGroup;
}

/**
 * Creates a log group encrypted at rest with its own customer-managed KMS key (rotation on). The
 * key policy lets the CloudWatch Logs service of this region use the key only for this account's
 * log groups (`kms:EncryptionContext:aws:logs:arn`), as the CloudWatch Logs user guide,
 * "Encrypt log data in CloudWatch Logs using AWS KMS", requires.
 *
 * @param scope - the construct that owns both
 * @param options - ids, description, retention, removal policy
 * @returns the key and the log group
 */
export function encryptedLogGroup(scope: Construct, options: EncryptedLogGroupOptions): EncryptedLogGroup {
  const removalPolicy = options.removalPolicy ?? RemovalPolicy.RETAIN;
  const key = new kms.Key(scope, options.keyId, {
    description: options.description,
    enableKeyRotation: true,
    removalPolicy,
  });
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      principals: [new iam.ServicePrincipal(`logs.${Aws.REGION}.amazonaws.com`)],
      actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      resources: ['*'],
      conditions: {
        ArnLike: {
          'kms:EncryptionContext:aws:logs:arn': `arn:${Aws.PARTITION}:logs:${Aws.REGION}:${Aws.ACCOUNT_ID}:log-group:*`,
        },
      },
    }),
  );
  const logGroup = new logs.LogGroup(scope, options.groupId, {
    retention: options.retention ?? logs.RetentionDays.ONE_MONTH,
    removalPolicy,
    encryptionKey: key,
  });
  return { key, logGroup };
}
