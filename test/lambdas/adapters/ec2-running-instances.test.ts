import { DescribeInstancesCommand, EC2Client } from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ec2RunningInstances } from '../../../lambdas/adapters/ec2-running-instances';
import { RegionalClients } from '../../../lambdas/adapters/regional-clients';
import { FleetListingError } from '../../../lambdas/domain';
import { expectValidAwsInputs } from './aws-model';

const CREDENTIALS = { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'secret' };
const LAUNCH = new Date('2026-03-10T08:00:00.000Z');

function instance(id: string, extra: Record<string, unknown> = {}) {
  return {
    InstanceId: id,
    InstanceType: 'p5.48xlarge' as never,
    LaunchTime: LAUNCH,
    State: { Name: 'running' as never },
    Placement: { AvailabilityZone: 'us-east-1a' },
    Tags: [
      { Key: 'team', Value: 'vision' },
      { Key: 'aws:autoscaling:groupName', Value: 'train-p5' },
    ],
    ...extra,
  };
}

describe('Ec2RunningInstances', () => {
  const ec2Mock = mockClient(EC2Client);
  let regionsAsked: string[];
  let lister: Ec2RunningInstances;

  beforeEach(() => {
    ec2Mock.reset();
    regionsAsked = [];
    lister = new Ec2RunningInstances({
      ec2: new RegionalClients((region) => {
        regionsAsked.push(region);
        return new EC2Client({ region, credentials: CREDENTIALS });
      }),
      regions: ['us-west-2', 'us-east-1'],
    });
  });

  afterEach(() => {
    expectValidAwsInputs(ec2Mock, 'ec2');
  });

  it('asks each region for running instances of the GPU families, every page', async () => {
    // Prepare
    ec2Mock
      .on(DescribeInstancesCommand)
      .resolvesOnce({ Reservations: [{ Instances: [instance('i-0b')] }], NextToken: 'page2' })
      .resolvesOnce({
        Reservations: [{ Instances: [instance('i-0a', { InstanceLifecycle: 'spot', Tags: [] })] }],
      })
      .resolves({ Reservations: [] });
    // Act
    const running = await lister.listRunning();
    // Assess
    const calls = ec2Mock.commandCalls(DescribeInstancesCommand).map((c) => c.args[0].input);
    // (the SDK paginator reuses one input object per region, so only the last page's NextToken is visible)
    expect(calls).toHaveLength(3);
    for (const input of calls) {
      expect(input).toMatchObject({
        Filters: [
          { Name: 'instance-state-name', Values: ['running'] },
          {
            Name: 'instance-type',
            Values: ['g5.*', 'g6.*', 'g6e.*', 'p4d.*', 'p4de.*', 'p5.*', 'p5e.*', 'p5en.*', 'p6-b200.*'],
          },
        ],
        MaxResults: 1000,
      });
    }
    expect(calls[1]?.NextToken).toBe('page2');
    expect(calls[2]?.NextToken).toBeUndefined();
    expect(regionsAsked).toEqual(['us-east-1', 'us-west-2']);
    expect(running).toEqual([
      {
        instance_id: 'i-0a',
        instance_type: 'p5.48xlarge',
        region: 'us-east-1',
        az: 'us-east-1a',
        launch_time: LAUNCH.toISOString(),
        lifecycle: 'spot',
        tags: {},
      },
      {
        instance_id: 'i-0b',
        instance_type: 'p5.48xlarge',
        region: 'us-east-1',
        az: 'us-east-1a',
        launch_time: LAUNCH.toISOString(),
        lifecycle: 'on-demand',
        tags: { team: 'vision', 'aws:autoscaling:groupName': 'train-p5' },
        asg_name: 'train-p5',
      },
    ]);
  });

  it('throws FleetListingError naming the region when EC2 refuses', async () => {
    // Prepare
    ec2Mock
      .on(DescribeInstancesCommand)
      .rejects(Object.assign(new Error('Rate exceeded'), { name: 'RequestLimitExceeded' }));
    // Act
    const listing = lister.listRunning();
    // Assess
    await expect(listing).rejects.toBeInstanceOf(FleetListingError);
    await expect(listing).rejects.toMatchObject({ region: 'us-east-1' });
  });

  it('refuses an empty region list', () => {
    // Act / Assess
    expect(
      () => new Ec2RunningInstances({ ec2: new RegionalClients(() => new EC2Client({})), regions: [] }),
    ).toThrow(/at least one AWS region/);
  });
});
