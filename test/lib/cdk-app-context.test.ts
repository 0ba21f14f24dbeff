import { describe, expect, it } from 'vitest';
import { stackNameFromContext, stackPropsFromContext } from '../../bin/cdk-app-context';
import { PropsValidationError } from '../../lib/props-validation-error';

/** A context source holding `values`, as `-c key=value` (strings) or cdk.json (any JSON) gives them. */
function context(values: Record<string, unknown>): { tryGetContext(key: string): unknown } {
  return { tryGetContext: (key) => values[key] };
}

describe('the CDK app context', () => {
  it('leaves every prop to the stack’s default when no context is given', () => {
    // Prepare / Act
    const props = stackPropsFromContext(context({}), {});

    // Assess
    expect(
      Object.entries(props).filter(([key, value]) => key !== 'description' && value !== undefined),
    ).toEqual([]);
    expect(stackNameFromContext(context({}))).toBe('GpuSentinel');
  });

  it('converts CLI strings: numbers, booleans, JSON, comma-separated lists', () => {
    // Prepare
    const cli = context({
      stackName: 'Fleet2',
      store: 'timestream',
      telemetryRetentionDays: '730',
      apiGatewayCloudWatchRole: 'false',
      ingestReservedConcurrency: '250',
      tracing: 'true',
      requireInstanceCredentials: 'false',
      priceOverridesUsdPerHour: '{"p5.48xlarge": 55.04}',
      agentRoleArns: 'arn:aws:iam::123456789012:role/A, arn:aws:iam::123456789012:role/B',
      fleetRegions: '["us-east-1","eu-north-1"]',
      metricsTeams: '',
      remediationDelayS: '900',
      spotPriceHistory: 'false',
      curDatabase: 'cur',
      curTable: 'gpu_fleet',
      curBucket: 'acme-cur-exports',
    });

    // Act
    const props = stackPropsFromContext(cli, {});

    // Assess
    expect(stackNameFromContext(cli)).toBe('Fleet2');
    expect(props).toMatchObject({
      store: 'timestream',
      telemetryRetentionDays: 730,
      apiGatewayCloudWatchRole: false,
      ingestReservedConcurrency: 250,
      tracing: true,
      requireInstanceCredentials: false,
      priceOverridesUsdPerHour: { 'p5.48xlarge': 55.04 },
      agentRoleArns: ['arn:aws:iam::123456789012:role/A', 'arn:aws:iam::123456789012:role/B'],
      fleetRegions: ['us-east-1', 'eu-north-1'],
      remediationDelayS: 900,
      spotPriceHistory: false,
      cur: { database: 'cur', table: 'gpu_fleet', bucketName: 'acme-cur-exports' },
    });
    expect(props.metricsTeams).toBeUndefined();
  });

  it('takes cdk.json values as they are: lists and objects', () => {
    // Prepare / Act
    const props = stackPropsFromContext(
      context({ metricsTeams: ['llm', 'vision'], alertEmails: { critical: ['oncall@example.com'] } }),
      {},
    );

    // Assess
    expect(props.metricsTeams).toEqual(['llm', 'vision']);
    expect(props.alertEmails).toEqual({ critical: ['oncall@example.com'] });
  });

  it('pins the stack to an environment only when both account and region are known', () => {
    // Prepare / Act / Assess
    expect(stackPropsFromContext(context({}), { CDK_DEFAULT_ACCOUNT: '123456789012' }).env).toBeUndefined();
    expect(
      stackPropsFromContext(context({}), {
        CDK_DEFAULT_ACCOUNT: '123456789012',
        CDK_DEFAULT_REGION: 'eu-west-1',
      }).env,
    ).toEqual({ account: '123456789012', region: 'eu-west-1' });
  });

  it.each([
    [
      { apiGatewayCloudWatchRole: 'yes' },
      'Expected `apiGatewayCloudWatchRole` to be `true` or `false`, got `"yes"`',
    ],
    [{ priceRates: '{"spot_discount": 0.6' }, 'Expected `priceRates` to be JSON'],
    [
      { ingestReservedConcurrency: '-5' },
      "Lambda keeps 100 of the account's concurrency unreserved, so the account's Lambda concurrency quota must be >= N + 100",
    ],
    [{ ingestReservedConcurrency: '2.5' }, 'Expected `ingestReservedConcurrency` to be an integer N >= 0'],
    [{ ingestReservedConcurrency: 'lots' }, 'aws lambda get-account-settings'],
    [{ agentRoleArns: '[not json' }, 'Expected `agentRoleArns` to be JSON'],
    [{ spotPriceHistory: 'off' }, 'Expected `spotPriceHistory` to be `true` or `false`'],
    [{ curDatabase: 'cur', curBucket: 'acme-cur' }, 'Expected `curTable` to be set with `curDatabase`'],
    [{ curTable: 'gpu_fleet' }, 'Expected `curDatabase` to be set with `curTable`'],
    [{ curDatabase: 'cur', curTable: 'gpu_fleet' }, 'Expected `curBucket` to be the S3 bucket'],
    [{ curBucket: 'acme-cur' }, 'Expected `curDatabase` to be set with `curTable`'],
    [
      { curDatabase: 'Cur-DB', curTable: 'gpu_fleet', curBucket: 'acme-cur' },
      'Expected `curDatabase` to be a Glue name',
    ],
    [
      { curDatabase: 'cur', curTable: 'gpu fleet', curBucket: 'acme-cur' },
      'Expected `curTable` to be a Glue name',
    ],
    [
      { curDatabase: 'cur', curTable: 'gpu_fleet', curBucket: 'Acme_CUR' },
      'Expected `curBucket` to be an S3 bucket name',
    ],
  ])('fails naming the key for %j', (values, message) => {
    // Prepare / Act
    const read = () => stackPropsFromContext(context(values), {});

    // Assess
    expect(read).toThrow(PropsValidationError);
    expect(read).toThrow(message);
  });
});
