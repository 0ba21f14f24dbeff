import type { CfnResource } from 'aws-cdk-lib';
import { Match, type Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { batchesInvokeArn, sharedStack } from './build-stack';

describe('AgentPolicy', () => {
  let stack: GpuSentinelStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = sharedStack());
  });

  it('creates one managed policy named after the stack and region, allowing only POST /v1/batches', () => {
    // Prepare
    const apiLogicalId = stack.getLogicalId(stack.api.api.node.defaultChild as CfnResource);

    // Act / Assess
    template.resourceCountIs('AWS::IAM::ManagedPolicy', 1);
    template.hasResourceProperties('AWS::IAM::ManagedPolicy', {
      ManagedPolicyName: { 'Fn::Join': ['', ['GpuSentinelAgentPolicy-TestStack-', { Ref: 'AWS::Region' }]] },
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

describe('AgentRole', () => {
  let stack: GpuSentinelStack;
  let template: Template;

  beforeAll(() => {
    ({ stack, template } = sharedStack());
  });

  it('is trusted by EC2 only, carries the agent policy and has an instance profile', () => {
    // Prepare
    const roleId = stack.getLogicalId(stack.agentRole.role.node.defaultChild as CfnResource);
    // Act / Assess
    template.hasResourceProperties('AWS::IAM::Role', {
      AssumeRolePolicyDocument: {
        Statement: [
          { Action: 'sts:AssumeRole', Effect: 'Allow', Principal: { Service: 'ec2.amazonaws.com' } },
        ],
      },
    });
    template.hasResourceProperties('AWS::IAM::ManagedPolicy', { Roles: [{ Ref: roleId }] });
    template.hasResourceProperties('AWS::IAM::InstanceProfile', { Roles: [{ Ref: roleId }] });
    template.hasOutput('AgentRoleArn', { Value: { 'Fn::GetAtt': [roleId, 'Arn'] } });
    template.hasOutput('AgentInstanceProfileArn', Match.anyValue());
  });

  it('names no IAM resource with a fixed account-global name: a second region deploys beside the first', () => {
    // Prepare
    const nameProps = [
      'RoleName',
      'ManagedPolicyName',
      'InstanceProfileName',
      'PolicyName',
      'UserName',
      'GroupName',
    ];
    const iamResources = Object.entries(
      template.toJSON().Resources as Record<string, { Type: string; Properties?: Record<string, unknown> }>,
    ).filter(([, r]) => r.Type.startsWith('AWS::IAM::') && r.Type !== 'AWS::IAM::Policy');
    // Act
    const fixed = iamResources.flatMap(([id, r]) =>
      nameProps
        .filter((p) => r.Properties?.[p] !== undefined)
        .filter((p) => !JSON.stringify(r.Properties?.[p]).includes('"AWS::Region"'))
        .map((p) => `${id}.${p}`),
    );
    // Assess
    expect(iamResources.length).toBeGreaterThan(2);
    expect(fixed).toEqual([]);
  });
});
