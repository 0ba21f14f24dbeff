import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';

/**
 * A Lambda execution role written by hand (no managed policy): trusts `lambda.amazonaws.com` and
 * may write to its own log group only (`logs:CreateLogStream`, `logs:PutLogEvents`); the caller adds
 * the rest, grant by grant.
 *
 * @param scope - the construct that owns the function
 * @param logGroup - the function's log group
 * @param what - the function, for the description, e.g. `report Lambda`
 * @returns the role, construct id `ServiceRole`
 */
export function lambdaServiceRole(scope: Construct, logGroup: logs.ILogGroup, what: string): iam.Role {
  const role = new iam.Role(scope, 'ServiceRole', {
    assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
    description: `gpu-sentinel ${what}: least privilege, written by hand`,
  });
  role.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
      resources: [logGroup.logGroupArn],
    }),
  );
  return role;
}
