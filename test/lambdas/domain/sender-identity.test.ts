import { describe, expect, it } from 'vitest';
import { judgeSender, parseAssumedRoleArn, type SenderClaim } from '../../../lambdas/domain';
import type { InstanceInfo } from '../../../lambdas/domain/types';

const ID = 'i-0abc12345def67890';
const CALLER = `arn:aws:sts::123456789012:assumed-role/GpuNodeRole/${ID}`;
const RUNNING: InstanceInfo = {
  instance_id: ID,
  region: 'us-east-1',
  state: 'running',
  instance_type: 'p5.48xlarge',
  tags: {},
  instance_profile_arn: 'arn:aws:iam::123456789012:instance-profile/GpuNodeProfile',
};

describe('parseAssumedRoleArn', () => {
  it.each([
    [CALLER, { partition: 'aws', accountId: '123456789012', roleName: 'GpuNodeRole', sessionName: ID }],
    [
      'arn:aws-us-gov:sts::123456789012:assumed-role/R/i-0abc1234',
      { partition: 'aws-us-gov', accountId: '123456789012', roleName: 'R', sessionName: 'i-0abc1234' },
    ],
    ['arn:aws:iam::123456789012:user/alice', undefined],
    ['arn:aws:sts::123456789012:federated-user/bob', undefined],
    ['arn:aws:iam::123456789012:root', undefined],
    [null, undefined],
  ])('reads %s', (arn, parts) => {
    expect(parseAssumedRoleArn(arn)).toEqual(parts);
  });
});

describe('judgeSender', () => {
  it.each<[string, SenderClaim]>([
    ['an instance for itself, without enrichment', { callerArn: CALLER, instanceId: ID }],
    ['an instance for itself, EC2 agreeing', { callerArn: CALLER, instanceId: ID, instance: RUNNING }],
    [
      'a stopping instance (agent_stop on its way down)',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, state: 'stopping' } },
    ],
    [
      'a g6e instance',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, instance_type: 'g6e.12xlarge' } },
    ],
    ['an agent role listed', { callerArn: CALLER, instanceId: ID, agentRoleNames: ['Other', 'GpuNodeRole'] }],
    [
      'the role of the instance profile',
      {
        callerArn: CALLER,
        instanceId: ID,
        instance: { ...RUNNING, instance_profile_role_names: ['GpuNodeRole'] },
      },
    ],
    [
      'an instance session whose body names no instance (validation decides)',
      { callerArn: CALLER, instanceId: undefined },
    ],
  ])('allows %s', (_name, claim) => {
    expect(judgeSender(claim)).toEqual({ allowed: true });
  });

  it.each<[string, SenderClaim, RegExp]>([
    [
      'another instance',
      { callerArn: CALLER, instanceId: 'i-0bbbbbbbbbbbbbbb2' },
      /may not send for i-0bbbbbbbbbbbbbbb2/,
    ],
    [
      'an IAM user',
      { callerArn: 'arn:aws:iam::123456789012:user/alice', instanceId: ID },
      /not an EC2 instance role session/,
    ],
    ['an anonymous caller', { callerArn: null, instanceId: ID }, /\(anonymous\)/],
    [
      'a user that names no instance',
      { callerArn: 'arn:aws:iam::123456789012:user/alice', instanceId: undefined },
      /not an EC2 instance role session/,
    ],
    [
      'a role that is not an agent role',
      { callerArn: CALLER, instanceId: ID, agentRoleNames: ['AgentRole'] },
      /GpuNodeRole is not an agent role/,
    ],
    [
      'an instance EC2 does not know',
      { callerArn: CALLER, instanceId: ID, instance: null },
      /EC2 knows no instance/,
    ],
    [
      'a stopped instance',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, state: 'stopped' } },
      /is stopped/,
    ],
    [
      'a terminated instance',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, state: 'terminated' } },
      /is terminated/,
    ],
    [
      'a CPU instance',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, instance_type: 'c7i.large' } },
      /expected a GPU instance type/,
    ],
    [
      'a Trainium instance',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, instance_type: 'trn1.32xlarge' } },
      /expected a GPU/,
    ],
    [
      "a caller whose role is not the instance profile's",
      {
        callerArn: CALLER,
        instanceId: ID,
        instance: { ...RUNNING, instance_profile_role_names: ['OtherRole'] },
      },
      /carries role OtherRole, not the caller's role GpuNodeRole/,
    ],
    [
      'an instance without a profile',
      { callerArn: CALLER, instanceId: ID, instance: { ...RUNNING, instance_profile_arn: undefined } },
      /no instance profile/,
    ],
  ])('refuses %s, saying why', (_name, claim, reason) => {
    const verdict = judgeSender(claim);
    expect(verdict.allowed).toBe(false);
    expect(verdict.allowed ? '' : verdict.reason).toMatch(reason);
  });
});
