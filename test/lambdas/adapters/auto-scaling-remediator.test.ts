import {
  AutoScalingClient,
  DescribeAutoScalingInstancesCommand,
  ResourceContentionFault,
  SetInstanceHealthCommand,
} from '@aws-sdk/client-auto-scaling';
import {
  CreateTagsCommand,
  EC2Client,
  RebootInstancesCommand,
  TerminateInstancesCommand,
} from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AutoScalingRemediator } from '../../../lambdas/adapters/auto-scaling-remediator';
import { RemediationFailedError, RemediationNotPossibleError } from '../../../lambdas/adapters/errors';
import type { RemediationDecision } from '../../../lambdas/domain/types';
import { expectValidAwsInputs } from './aws-model';

const decision = (overrides: Partial<RemediationDecision> = {}): RemediationDecision => ({
  rule: 'xid_fatal',
  severity: 'critical',
  instance_id: 'i-0abc',
  gpu_index: 3,
  asg_name: 'p5-train',
  action: 'replace',
  reason: 'in Auto Scaling group p5-train',
  at: '2026-03-10T12:00:06.000Z',
  alert_id: 'xid_fatal:i-0abc:3',
  dry_run: false,
  ...overrides,
});

const contention = () =>
  new ResourceContentionFault({ message: 'You already have a pending update', $metadata: {} });

describe('AutoScalingRemediator', () => {
  const autoScaling = new AutoScalingClient({ region: 'us-east-1' });
  const ec2 = new EC2Client({ region: 'us-east-1' });
  const asMock = mockClient(autoScaling);
  const ec2Mock = mockClient(ec2);
  let sleeps: number[];
  let remediator: AutoScalingRemediator;

  afterEach(() => {
    expectValidAwsInputs(asMock, 'autoscaling');
    expectValidAwsInputs(ec2Mock, 'ec2');
  });

  beforeEach(() => {
    asMock.reset();
    ec2Mock.reset();
    sleeps = [];
    remediator = new AutoScalingRemediator({ autoScaling, ec2, sleep: async (ms) => void sleeps.push(ms) });
    asMock.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [
        {
          InstanceId: 'i-0abc',
          AutoScalingGroupName: 'p5-train',
          AvailabilityZone: 'us-east-1a',
          LifecycleState: 'InService',
          HealthStatus: 'HEALTHY',
          ProtectedFromScaleIn: false,
        },
      ],
    });
    asMock.on(SetInstanceHealthCommand).resolves({});
  });

  it('confirms the group, then marks the instance Unhealthy without the grace period', async () => {
    // Act
    await remediator.replace(decision());

    // Assess
    expect(asMock.commandCalls(DescribeAutoScalingInstancesCommand)[0]!.args[0].input).toEqual({
      InstanceIds: ['i-0abc'],
    });
    expect(asMock.commandCalls(SetInstanceHealthCommand).map((c) => c.args[0].input)).toEqual([
      { InstanceId: 'i-0abc', HealthStatus: 'Unhealthy', ShouldRespectGracePeriod: false },
    ]);
    expect(ec2Mock.commandCalls(TerminateInstancesCommand)).toHaveLength(0);
  });

  it('throws RemediationNotPossibleError and changes nothing when the instance is in no group', async () => {
    // Prepare
    asMock.on(DescribeAutoScalingInstancesCommand).resolves({ AutoScalingInstances: [] });

    // Act
    const result = remediator.replace(decision());

    // Assess
    await expect(result).rejects.toBeInstanceOf(RemediationNotPossibleError);
    expect(asMock.commandCalls(SetInstanceHealthCommand)).toHaveLength(0);
  });

  it.each([
    { contentions: 1, sleeps: [200] },
    { contentions: 3, sleeps: [200, 400, 800] },
  ])(
    'retries $contentions ResourceContention error(s) with backoff',
    async ({ contentions, sleeps: expected }) => {
      // Prepare
      let chain = asMock.on(SetInstanceHealthCommand);
      for (let i = 0; i < contentions; i++) chain = chain.rejectsOnce(contention());
      chain.resolves({});

      // Act
      await remediator.replace(decision());

      // Assess
      expect(asMock.commandCalls(SetInstanceHealthCommand)).toHaveLength(contentions + 1);
      expect(sleeps).toEqual(expected);
    },
  );

  it('gives up after 3 retries of ResourceContention', async () => {
    // Prepare
    asMock.on(SetInstanceHealthCommand).rejects(contention());

    // Act
    const result = remediator.replace(decision());

    // Assess
    await expect(result).rejects.toBeInstanceOf(RemediationFailedError);
    expect(asMock.commandCalls(SetInstanceHealthCommand)).toHaveLength(4);
  });

  it('does not retry other errors', async () => {
    // Prepare
    const cause = Object.assign(new Error('not authorized'), { name: 'AccessDenied' });
    asMock.on(SetInstanceHealthCommand).rejects(cause);

    // Act
    const result = remediator.replace(decision());

    // Assess
    await expect(result).rejects.toMatchObject({
      name: 'RemediationFailedError',
      operation: 'SetInstanceHealth',
      cause,
    });
    expect(asMock.commandCalls(SetInstanceHealthCommand)).toHaveLength(1);
    expect(sleeps).toEqual([]);
  });

  it('throws RemediationFailedError when the membership cannot be read', async () => {
    // Prepare
    asMock.on(DescribeAutoScalingInstancesCommand).rejects(new Error('Throttling'));

    // Act
    const result = remediator.replace(decision());

    // Assess
    await expect(result).rejects.toMatchObject({
      name: 'RemediationFailedError',
      operation: 'DescribeAutoScalingInstances',
    });
    expect(asMock.commandCalls(SetInstanceHealthCommand)).toHaveLength(0);
  });

  it('quarantines by tagging the instance with the rule, nothing else', async () => {
    // Prepare
    ec2Mock.on(CreateTagsCommand).resolves({});

    // Act
    await remediator.quarantine(decision({ action: 'quarantine', asg_name: undefined, rule: 'gpu_lost' }));

    // Assess
    expect(ec2Mock.commandCalls(CreateTagsCommand).map((c) => c.args[0].input)).toEqual([
      { Resources: ['i-0abc'], Tags: [{ Key: 'gpu-sentinel:quarantine', Value: 'gpu_lost' }] },
    ]);
    expect(ec2Mock.calls()).toHaveLength(1);
    expect(asMock.calls()).toHaveLength(0);
  });

  it('throws RemediationFailedError when tagging fails', async () => {
    // Prepare
    ec2Mock.on(CreateTagsCommand).rejects(new Error('UnauthorizedOperation'));

    // Act
    const result = remediator.quarantine(decision({ action: 'quarantine' }));

    // Assess
    await expect(result).rejects.toMatchObject({ name: 'RemediationFailedError', operation: 'CreateTags' });
  });

  it('reboots the one instance with RebootInstances, nothing else (a reboot resets every GPU)', async () => {
    // Prepare
    ec2Mock.on(RebootInstancesCommand).resolves({});

    // Act
    await remediator.reboot(
      decision({ action: 'reboot', instance_id: 'i-0a5e00000000000a1', rule: 'xid_fatal' }),
    );

    // Assess
    expect(ec2Mock.commandCalls(RebootInstancesCommand).map((c) => c.args[0].input)).toEqual([
      { InstanceIds: ['i-0a5e00000000000a1'] },
    ]);
    expect(ec2Mock.calls()).toHaveLength(1);
    expect(asMock.calls()).toHaveLength(0);
  });

  it('throws RemediationFailedError naming RebootInstances when the reboot is refused', async () => {
    // Prepare
    const cause = Object.assign(new Error('You are not authorized to perform this operation.'), {
      name: 'UnauthorizedOperation',
    });
    ec2Mock.on(RebootInstancesCommand).rejects(cause);

    // Act
    const result = remediator.reboot(decision({ action: 'reboot' }));

    // Assess
    await expect(result).rejects.toBeInstanceOf(RemediationFailedError);
    await expect(result).rejects.toMatchObject({ operation: 'RebootInstances', instanceId: 'i-0abc', cause });
  });

  it.each([{ maxAttempts: 0 }, { maxAttempts: 1.5 }, { baseDelayMs: -1 }])('refuses options %o', (opts) => {
    // Act / Assess
    expect(() => new AutoScalingRemediator({ autoScaling, ec2, ...opts })).toThrow(RangeError);
  });
});
