import type { CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { batchesInvokeArn, buildStack } from './build-stack';

describe('AgentPolicy', () => {
  let stack: GpuSentinelStack;
  let template: Template;

  beforeAll(() => {
    stack = buildStack();
    template = Template.fromStack(stack);
  });

  it('creates one managed policy named after the stack allowing only POST /v1/batches', () => {
    // Prepare
    const apiLogicalId = stack.getLogicalId(stack.api.api.node.defaultChild as CfnResource);

    // Act / Assess
    template.resourceCountIs('AWS::IAM::ManagedPolicy', 1);
    template.hasResourceProperties('AWS::IAM::ManagedPolicy', {
      ManagedPolicyName: 'GpuSentinelAgentPolicy-TestStack',
      PolicyDocument: {
        Statement: [
          {
            Sid: 'SendBatches',
            Effect: 'Allow',
            Action: 'execute-api:Invoke',
            Resource: batchesInvokeArn(apiLogicalId),
          },
        ],
      },
    });
  });
});
