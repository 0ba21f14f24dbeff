import type { StoreKind } from '../lambdas/domain/lambda-environment';

/**
 * Why a Lambda role reading the store has statements on `Resource: "*"` (cdk-nag
 * `AwsSolutions-IAM5[Resource::*]`): only actions without resource-level permissions are there.
 *
 * @param store - the store the Lambda reads
 * @param extra - further `*` actions of that Lambda and why, e.g. `ec2:DescribeInstances (…)`
 * @returns the acknowledgement's reason
 */
export function starResourceReason(store: StoreKind, ...extra: readonly string[]): string {
  return `Only actions without resource-level permissions use Resource "*": ${[
    ...(store === 'timestream' ? ['timestream:DescribeEndpoints (endpoint discovery)'] : []),
    ...extra,
    'xray:PutTraceSegments/PutTelemetryRecords (added by active tracing, when `tracing` is on)',
  ].join(', ')}.`;
}
