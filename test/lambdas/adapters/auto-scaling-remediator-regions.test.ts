import {
  AutoScalingClient,
  DescribeAutoScalingInstancesCommand,
  SetInstanceHealthCommand,
} from '@aws-sdk/client-auto-scaling';
import { CreateTagsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AutoScalingRemediator } from '../../../lambdas/adapters/auto-scaling-remediator';
import { RegionalClients } from '../../../lambdas/adapters/regional-clients';
import type { RemediationDecision } from '../../../lambdas/domain/types';
import { expectValidAwsInputs } from './aws-model';

const decision = (overrides: Partial<RemediationDecision> = {}): RemediationDecision => ({
  rule: 'xid_fatal',
  severity: 'critical',
  instance_id: 'i-0abc12345def67890',
  asg_name: 'p5-train',
  action: 'replace',
  reason: 'in Auto Scaling group p5-train',
  at: '2026-03-10T12:00:06.000Z',
  alert_id: 'xid_fatal:i-0abc12345def67890',
  dry_run: false,
  ...overrides,
});

describe('AutoScalingRemediator across regions', () => {
  const asMock = mockClient(AutoScalingClient);
  const ec2Mock = mockClient(EC2Client);
  const credentials = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

  afterEach(() => {
    expectValidAwsInputs(asMock, 'autoscaling');
    expectValidAwsInputs(ec2Mock, 'ec2');
  });

  beforeEach(() => {
    asMock.reset();
    ec2Mock.reset();
    asMock.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [
        { InstanceId: 'i-0abc12345def67890', AutoScalingGroupName: 'p5-train' } as never,
      ],
    });
    asMock.on(SetInstanceHealthCommand).resolves({});
    ec2Mock.on(CreateTagsCommand).resolves({});
  });

  it.each([
    ['replace', 'eu-west-1'],
    ['quarantine', 'ap-northeast-1'],
  ] as const)("sends a %s to the instance's region (%s), not the Lambda's", async (action, region) => {
    // Prepare
    const remediator = new AutoScalingRemediator({
      autoScaling: new RegionalClients((r) => new AutoScalingClient({ region: r, credentials })),
      ec2: new RegionalClients((r) => new EC2Client({ region: r, credentials })),
    });
    // Act
    if (action === 'replace') await remediator.replace(decision({ region }));
    else await remediator.quarantine(decision({ action, region }));
    // Assess
    const calls = action === 'replace' ? asMock.calls() : ec2Mock.calls();
    expect(calls.length).toBeGreaterThan(0);
    for (const call of calls) {
      expect(await (call.thisValue as { config: { region: () => Promise<string> } }).config.region()).toBe(
        region,
      );
    }
  });
});
