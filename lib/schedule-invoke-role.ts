import { Aws, Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import type { Construct } from 'constructs';

/**
 * The role EventBridge Scheduler assumes to run a Lambda on a schedule: trusts
 * `scheduler.amazonaws.com` from this account only (`aws:SourceAccount`), and may only invoke
 * `fn` (the `LambdaInvoke` target grants `lambda:InvokeFunction` on the function and `ARN:*`,
 * acknowledged to cdk-nag with the reason).
 *
 * @param scope - the construct that owns the schedule
 * @param id - the role's construct id (a contract: `ScheduleRole`)
 * @param fn - the only function it may invoke
 * @param what - what the function is, for the description and the reason, e.g. `the report Lambda`
 * @returns the role
 */
export function scheduleInvokeRole(
  scope: Construct,
  id: string,
  fn: lambda.Function,
  what: string,
): iam.Role {
  const role = new iam.Role(scope, id, {
    assumedBy: new iam.ServicePrincipal('scheduler.amazonaws.com', {
      conditions: { StringEquals: { 'aws:SourceAccount': Aws.ACCOUNT_ID } },
    }),
    description: `gpu-sentinel schedule: may invoke ${what} only`,
  });
  const functionLogicalId = Stack.of(scope).getLogicalId(fn.node.defaultChild as lambda.CfnFunction);
  Validations.of(role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::<${functionLogicalId}.Arn>:*]`,
    reason: `lambda:InvokeFunction on ${what} and its versions/aliases (grantInvoke adds ARN:*); no other function.`,
  });
  return role;
}
