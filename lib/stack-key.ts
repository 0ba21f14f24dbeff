import { Aws, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import type { Construct } from 'constructs';

/** Construct id of the stack's key, a child of the stack (construct ids are a contract). */
export const STACK_KEY_ID = 'EncryptionKey';

/**
 * The stack's one customer-managed KMS key (rotation on, retained at stack deletion): it encrypts
 * the telemetry, reports and rejects buckets, the Firehose streams, Athena results, the SNS topics,
 * the Timestream database and every log group. One key instead of one per resource: each key is
 * $1 a month and each of its first two yearly rotations $1 more (AWS KMS pricing page), and the
 * grants, not the key, say who may use it. Made by its first user: the telemetry store makes it as
 * its own `Key` (so a stack deployed before keeps its store key, and the data it encrypted stays
 * readable), anything else finds it there; a stack without a store gets it at its root as
 * {@link STACK_KEY_ID}. Its policy lets:
 * - the account administer it (the CDK default);
 * - CloudWatch Logs of this region use it for this account's log groups only
 *   (`kms:EncryptionContext:aws:logs:arn`), as the CloudWatch Logs user guide, "Encrypt log data
 *   in CloudWatch Logs using AWS KMS", requires;
 * - CloudWatch alarms of this account publish to the encrypted topics (`kms:Decrypt`,
 *   `kms:GenerateDataKey*`, `aws:SourceAccount`), added by `AlertTopics`.
 * Everything else is granted on the roles that use it (`grantEncryptDecrypt`, …).
 *
 * @param scope - any construct of the stack
 * @param home - where to make the key when the stack has none yet, and its construct id
 * @default home - the stack's root, {@link STACK_KEY_ID}
 * @returns the key
 */
export function stackKey(
  scope: Construct,
  home: { readonly scope: Construct; readonly id: string } = { scope: Stack.of(scope), id: STACK_KEY_ID },
): kms.Key {
  const stack = Stack.of(scope);
  const existing = STACK_KEYS.get(stack);
  if (existing !== undefined) return existing;
  const key = new kms.Key(home.scope, home.id, {
    description: `gpu-sentinel ${stack.stackName}: encrypts its buckets, streams, topics, store and log groups`,
    enableKeyRotation: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'AllowCloudWatchLogsForThisAccountsLogGroups',
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
  STACK_KEYS.set(stack, key);
  return key;
}

/** The key of each stack, once made. */
const STACK_KEYS = new WeakMap<Stack, kms.Key>();
