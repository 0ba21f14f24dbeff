import {
  AutoScalingClient,
  DescribeAutoScalingGroupsCommand,
  DescribeAutoScalingInstancesCommand,
} from '@aws-sdk/client-auto-scaling';
import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { GetInstanceProfileCommand, IAMClient, NoSuchEntityException } from '@aws-sdk/client-iam';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ec2InstanceDirectory } from '../../../lambdas/adapters/ec2-instance-directory';
import { RegionalClients } from '../../../lambdas/adapters/regional-clients';
import { InstanceLookupError } from '../../../lambdas/domain';
import { autoScalingGroupAnswer, describeInstancesAnswer, instanceProfileAnswer } from './aws-answers';
import { expectValidAwsInputs } from './aws-model';

const ID = 'i-0abc12345def67890';
const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };

describe('Ec2InstanceDirectory', () => {
  const ec2Mock = mockClient(EC2Client);
  const asMock = mockClient(AutoScalingClient);
  const iamMock = mockClient(IAMClient);
  let nowMs: number;
  let directory: Ec2InstanceDirectory;

  afterEach(() => {
    expectValidAwsInputs(ec2Mock, 'ec2');
    expectValidAwsInputs(asMock, 'autoscaling');
    expectValidAwsInputs(iamMock, 'iam');
  });

  beforeEach(() => {
    ec2Mock.reset();
    asMock.reset();
    iamMock.reset();
    iamMock.on(GetInstanceProfileCommand).resolves(instanceProfileAnswer('GpuNodeRole', 'GpuNode'));
    nowMs = 1_000_000;
    ec2Mock.on(DescribeInstancesCommand).resolves(
      describeInstancesAnswer({
        instanceId: ID,
        profileName: 'GpuNode',
        tags: { team: 'research', 'gpu-sentinel:remediation': 'off' },
      }),
    );
    asMock.on(DescribeAutoScalingInstancesCommand).resolves({
      AutoScalingInstances: [{ InstanceId: ID, AutoScalingGroupName: 'train-p5' } as never],
    });
    asMock
      .on(DescribeAutoScalingGroupsCommand)
      .resolves(autoScalingGroupAnswer('train-p5', 32, { owner: 'ml' }));
    directory = new Ec2InstanceDirectory({
      ec2: new RegionalClients((region) => new EC2Client({ region, credentials: CREDENTIALS })),
      autoScaling: new RegionalClients(
        (region) => new AutoScalingClient({ region, credentials: CREDENTIALS }),
      ),
      nowMs: () => nowMs,
      ttlMs: 60_000,
      negativeTtlMs: 5_000,
    });
  });

  it('combines EC2 and Auto Scaling into one InstanceInfo', async () => {
    // Act
    const info = await directory.describe(ID, 'us-west-2');
    // Assess
    expect(info).toEqual({
      instance_id: ID,
      region: 'us-west-2',
      state: 'running',
      instance_type: 'p5.48xlarge',
      tags: { team: 'research', 'gpu-sentinel:remediation': 'off' },
      instance_profile_arn: 'arn:aws:iam::123456789012:instance-profile/GpuNode',
      asg: { name: 'train-p5', desired_capacity: 32, tags: { owner: 'ml' } },
    });
    expect(asMock.commandCalls(DescribeAutoScalingGroupsCommand)[0]!.args[0].input).toEqual({
      AutoScalingGroupNames: ['train-p5'],
    });
  });

  it('asks each region through its own client, made once', async () => {
    // Act
    await directory.describe(ID, 'us-west-2');
    await directory.describe(ID, 'eu-west-1');
    // Assess
    const regions = await Promise.all(
      ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => (c.thisValue as EC2Client).config.region()),
    );
    expect(regions).toEqual(['us-west-2', 'eu-west-1']);
  });

  it('reuses an answer until its TTL ends, then asks again', async () => {
    // Act
    await directory.describe(ID, 'us-east-1');
    nowMs += 59_999;
    await directory.describe(ID, 'us-east-1');
    const cached = ec2Mock.commandCalls(DescribeInstancesCommand).length;
    nowMs += 2;
    await directory.describe(ID, 'us-east-1');
    // Assess
    expect(cached).toBe(1);
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(2);
  });

  it.each([
    ['an empty answer', () => ec2Mock.on(DescribeInstancesCommand).resolves({ Reservations: [] })],
    [
      'InvalidInstanceID.NotFound',
      () =>
        ec2Mock
          .on(DescribeInstancesCommand)
          .rejects(Object.assign(new Error('not found'), { name: 'InvalidInstanceID.NotFound' })),
    ],
  ])('answers undefined for %s and keeps that only for the shorter negative TTL', async (_name, arrange) => {
    // Prepare
    arrange();
    // Act
    const first = await directory.describe(ID, 'us-east-1');
    nowMs += 4_999;
    await directory.describe(ID, 'us-east-1');
    nowMs += 2;
    await directory.describe(ID, 'us-east-1');
    // Assess
    expect(first).toBeUndefined();
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(2);
    expect(asMock.commandCalls(DescribeAutoScalingInstancesCommand)).toEqual([]);
  });

  it('answers an instance outside any group without asg and without asking for groups', async () => {
    // Prepare
    asMock.on(DescribeAutoScalingInstancesCommand).resolves({ AutoScalingInstances: [] });
    // Act
    const info = await directory.describe(ID, 'us-east-1');
    // Assess
    expect(info).not.toHaveProperty('asg');
    expect(asMock.commandCalls(DescribeAutoScalingGroupsCommand)).toEqual([]);
  });

  it.each([
    [
      'EC2',
      () =>
        ec2Mock
          .on(DescribeInstancesCommand)
          .rejects(Object.assign(new Error('slow down'), { name: 'RequestLimitExceeded' })),
    ],
    ['Auto Scaling', () => asMock.on(DescribeAutoScalingInstancesCommand).rejects(new Error('AccessDenied'))],
  ])('throws InstanceLookupError when %s cannot be asked, and caches nothing', async (_name, arrange) => {
    // Prepare
    arrange();
    // Act
    const first = directory.describe(ID, 'us-east-1');
    // Assess
    await expect(first).rejects.toBeInstanceOf(InstanceLookupError);
    await expect(directory.describe(ID, 'us-east-1')).rejects.toMatchObject({
      instanceId: ID,
      region: 'us-east-1',
    });
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(2);
  });

  it('evicts the oldest entry past maxEntries', async () => {
    // Prepare
    const small = new Ec2InstanceDirectory({
      ec2: new RegionalClients((region) => new EC2Client({ region, credentials: CREDENTIALS })),
      autoScaling: new RegionalClients(
        (region) => new AutoScalingClient({ region, credentials: CREDENTIALS }),
      ),
      nowMs: () => nowMs,
      maxEntries: 1,
    });
    // Act
    await small.describe(ID, 'us-east-1');
    await small.describe(ID, 'us-west-2');
    await small.describe(ID, 'us-east-1');
    // Assess
    expect(ec2Mock.commandCalls(DescribeInstancesCommand)).toHaveLength(3);
  });

  it.each([
    [{ ttlMs: -1 }, /ttlMs/],
    [{ negativeTtlMs: Number.NaN }, /negativeTtlMs/],
    [{ maxEntries: 0 }, /maxEntries/],
  ])('refuses %o naming the option', (bad, message) => {
    expect(
      () =>
        new Ec2InstanceDirectory({
          ec2: new RegionalClients((region) => new EC2Client({ region })),
          autoScaling: new RegionalClients((region) => new AutoScalingClient({ region })),
          ...bad,
        }),
    ).toThrow(message);
  });

  describe('with IAM', () => {
    const withIam = () =>
      new Ec2InstanceDirectory({
        ec2: new RegionalClients((region) => new EC2Client({ region, credentials: CREDENTIALS })),
        autoScaling: new RegionalClients(
          (region) => new AutoScalingClient({ region, credentials: CREDENTIALS }),
        ),
        iam: new IAMClient({ region: 'us-east-1', credentials: CREDENTIALS }),
        nowMs: () => nowMs,
      });

    it('adds the role of the instance profile, asking IAM once per profile', async () => {
      // Prepare
      const directory = withIam();
      // Act
      const first = await directory.describe(ID, 'us-east-1');
      await directory.describe(ID, 'eu-west-1');
      // Assess
      expect(first?.instance_profile_role_names).toEqual(['GpuNodeRole']);
      expect(iamMock.commandCalls(GetInstanceProfileCommand).map((c) => c.args[0].input)).toEqual([
        { InstanceProfileName: 'GpuNode' },
      ]);
    });

    it('answers no role for a profile IAM does not know', async () => {
      // Prepare
      iamMock
        .on(GetInstanceProfileCommand)
        .rejects(new NoSuchEntityException({ message: 'gone', $metadata: {} }));
      // Act
      const info = await withIam().describe(ID, 'us-east-1');
      // Assess
      expect(info?.instance_profile_role_names).toEqual([]);
    });

    it('throws InstanceLookupError when IAM cannot be asked', async () => {
      // Prepare
      iamMock.on(GetInstanceProfileCommand).rejects(new Error('AccessDenied'));
      // Act / Assess
      await expect(withIam().describe(ID, 'us-east-1')).rejects.toBeInstanceOf(InstanceLookupError);
    });
  });
});
