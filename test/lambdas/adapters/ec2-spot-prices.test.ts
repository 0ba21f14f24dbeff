import { DescribeSpotPriceHistoryCommand, EC2Client } from '@aws-sdk/client-ec2';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Ec2SpotPrices } from '../../../lambdas/adapters/ec2-spot-prices';
import { RegionalClients } from '../../../lambdas/adapters/regional-clients';
import { expectValidAwsInputs } from './aws-model';

/**
 * EC2 answers a range with every price change in it and the change in effect at its start (the
 * botocore example of DescribeSpotPriceHistory returns changes before its StartTime), newest first.
 */
const HISTORY = [
  {
    AvailabilityZone: 'us-east-1a',
    InstanceType: 'p5.48xlarge',
    ProductDescription: 'Linux/UNIX',
    SpotPrice: '23.500000',
    Timestamp: new Date('2026-03-10T12:40:00Z'),
  },
  {
    AvailabilityZone: 'us-east-1a',
    InstanceType: 'p5.48xlarge',
    ProductDescription: 'Linux/UNIX',
    SpotPrice: '21.980000',
    Timestamp: new Date('2026-03-10T09:12:31Z'),
  },
] as const;

const ec2 = mockClient(EC2Client);

describe('Ec2SpotPrices', () => {
  beforeEach(() => {
    ec2.reset();
  });

  afterEach(() => {
    expectValidAwsInputs(ec2, 'ec2');
  });

  const prices = () => new Ec2SpotPrices({ ec2: new RegionalClients((region) => new EC2Client({ region })) });

  it.each([
    ['12:00:10, before the change at 12:40', '2026-03-10T12:00:10Z', 21.98],
    ['12:50:00, after it', '2026-03-10T12:50:00Z', 23.5],
  ])('prices %s at the price then in effect', async (_name, at, usd) => {
    // Prepare
    ec2.on(DescribeSpotPriceHistoryCommand).resolves({ SpotPriceHistory: [...HISTORY] });
    // Act
    const price = await prices().priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', new Date(at));
    // Assess
    expect(price).toBe(usd);
  });

  it('asks once per type, AZ and hour, for Linux in that hour', async () => {
    // Prepare
    ec2.on(DescribeSpotPriceHistoryCommand).resolves({ SpotPriceHistory: [...HISTORY] });
    const spot = prices();
    // Act
    await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', new Date('2026-03-10T12:00:10Z'));
    await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', new Date('2026-03-10T12:59:50Z'));
    await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1b', new Date('2026-03-10T12:00:10Z'));
    await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', new Date('2026-03-10T13:00:10Z'));
    // Assess
    const inputs = ec2.commandCalls(DescribeSpotPriceHistoryCommand).map((c) => c.args[0].input);
    expect(inputs).toHaveLength(3);
    expect(inputs[0]).toEqual({
      InstanceTypes: ['p5.48xlarge'],
      AvailabilityZone: 'us-east-1a',
      ProductDescriptions: ['Linux/UNIX'],
      StartTime: new Date('2026-03-10T12:00:00Z'),
      EndTime: new Date('2026-03-10T13:00:00Z'),
    });
  });

  it('reads every page', async () => {
    // Prepare
    ec2
      .on(DescribeSpotPriceHistoryCommand)
      .resolvesOnce({ SpotPriceHistory: [HISTORY[0]], NextToken: 'p2' })
      .resolvesOnce({ SpotPriceHistory: [HISTORY[1]], NextToken: '' });
    // Act
    const price = await prices().priceAt(
      'p5.48xlarge',
      'us-east-1',
      'us-east-1a',
      new Date('2026-03-10T12:00:10Z'),
    );
    // Assess
    expect(price).toBe(21.98);
    expect(ec2.commandCalls(DescribeSpotPriceHistoryCommand)[1]?.args[0].input.NextToken).toBe('p2');
  });

  it('answers undefined when EC2 fails or knows no price, and asks again after a failure', async () => {
    // Prepare
    ec2
      .on(DescribeSpotPriceHistoryCommand)
      .rejectsOnce(new Error('RequestLimitExceeded'))
      .resolvesOnce({ SpotPriceHistory: [] });
    const spot = prices();
    const at = new Date('2026-03-10T12:00:10Z');
    // Act
    const failed = await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', at);
    const none = await spot.priceAt('p5.48xlarge', 'us-east-1', 'us-east-1a', at);
    // Assess
    expect(failed).toBeUndefined();
    expect(none).toBeUndefined();
    expect(ec2.commandCalls(DescribeSpotPriceHistoryCommand)).toHaveLength(2);
  });
});
