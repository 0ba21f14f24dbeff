import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import { TIMESTREAM_LIVEANALYTICS_REGIONS } from '../../lib/constants';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack, sharedStack } from './build-stack';

describe('TelemetryDatabase', () => {
  let template: Template;
  let keyLogicalId: string;

  beforeAll(() => {
    const stack = buildStack({ store: 'timestream' });
    template = Template.fromStack(stack);
    keyLogicalId = stack.getLogicalId(stack.database?.key.node.defaultChild as never);
  });

  it('creates the database under a name CloudFormation generates (it is retained: a fixed name would fail the next deploy), encrypted with its own customer-managed key', () => {
    // Prepare / Act
    const databases = Object.values(template.findResources('AWS::Timestream::Database'));

    // Assess
    expect(databases).toHaveLength(1);
    expect(databases[0]?.Properties).toEqual({ KmsKeyId: { 'Fn::GetAtt': [keyLogicalId, 'Arn'] } });
  });

  it('encrypts the database with the stack’s rotating key', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::KMS::Key', {
      EnableKeyRotation: true,
      Description: Match.stringLikeRegexp('encrypts its buckets, streams, topics, store and log groups'),
    });
  });

  it('retains the database when the stack is deleted', () => {
    // Prepare / Act / Assess
    template.hasResource('AWS::Timestream::Database', {
      DeletionPolicy: 'Retain',
      UpdateReplacePolicy: 'Retain',
    });
  });

  it.each(['gpu_windows', 'efa_windows', 'events'])(
    'creates table %s with 24 h memory, 365 d magnetic retention and magnetic writes on',
    (tableName) => {
      // Prepare / Act / Assess
      template.hasResourceProperties('AWS::Timestream::Table', {
        TableName: tableName,
        RetentionProperties: {
          MemoryStoreRetentionPeriodInHours: '24',
          MagneticStoreRetentionPeriodInDays: '365',
        },
        MagneticStoreWriteProperties: { EnableMagneticStoreWrites: true },
      });
    },
  );

  it('creates exactly three tables', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::Timestream::Table', 3);
  });

  it('passes custom name and retention through', () => {
    // Prepare
    const stack = buildStack({
      store: 'timestream',
      databaseName: 'fleet.metrics-2',
      memoryRetentionHours: 8766,
      magneticRetentionDays: 1,
    });

    // Act
    const custom = Template.fromStack(stack);

    // Assess
    custom.hasResourceProperties('AWS::Timestream::Database', { DatabaseName: 'fleet.metrics-2' });
    custom.hasResourceProperties('AWS::Timestream::Table', {
      RetentionProperties: {
        MemoryStoreRetentionPeriodInHours: '8766',
        MagneticStoreRetentionPeriodInDays: '1',
      },
    });
  });

  it.each([
    ['databaseName', { databaseName: 'ab' }, '`"ab"` (string)'],
    ['databaseName', { databaseName: 'gpu sentinel' }, '`"gpu sentinel"` (string)'],
    ['databaseName', { databaseName: 'x'.repeat(257) }, '(string)'],
    ['databaseName', { databaseName: 'gpu/sentinel' }, '`"gpu/sentinel"`'],
    ['memoryRetentionHours', { memoryRetentionHours: 0 }, '`0` (number)'],
    ['memoryRetentionHours', { memoryRetentionHours: 8767 }, '`8767` (number)'],
    ['memoryRetentionHours', { memoryRetentionHours: 1.5 }, '`1.5` (number)'],
    ['memoryRetentionHours', { memoryRetentionHours: Number.NaN }, '`NaN` (number)'],
    ['magneticRetentionDays', { magneticRetentionDays: 0 }, '`0` (number)'],
    ['magneticRetentionDays', { magneticRetentionDays: 73_001 }, '`73001` (number)'],
    ['magneticRetentionDays', { magneticRetentionDays: -1 }, '`-1` (number)'],
  ])('fails if %s is %j', (prop, props, got) => {
    // Prepare / Act
    const build = () => buildStack({ store: 'timestream', ...props });

    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(`Expected \`${prop}\` to be`);
    expect(build).toThrow(got);
  });

  it('names the allowed range in the retention error', () => {
    // Prepare / Act / Assess
    expect(() => buildStack({ store: 'timestream', memoryRetentionHours: 0 })).toThrow(
      'Expected `memoryRetentionHours` to be an integer in 1..8766, got `0` (number)',
    );
  });
});

describe('TelemetryDatabase regions', () => {
  it('asserts in the template’s Rules that the region has Timestream for LiveAnalytics when the stack is environment-agnostic', () => {
    // Prepare / Act
    const rules = sharedStack({ store: 'timestream' }).template.toJSON().Rules as Record<string, unknown>;

    // Assess
    expect(rules.TimestreamLiveAnalyticsRegion).toEqual({
      Assertions: [
        {
          Assert: { 'Fn::Contains': [[...TIMESTREAM_LIVEANALYTICS_REGIONS], { Ref: 'AWS::Region' }] },
          AssertDescription: expect.stringContaining('deploy the default store (athena)'),
        },
      ],
    });
  });

  it('adds no rule for the default store', () => {
    // Prepare / Act / Assess
    expect(sharedStack().template.toJSON().Rules?.TimestreamLiveAnalyticsRegion).toBeUndefined();
  });

  it('synthesizes in a known region that has it, with no rule', () => {
    // Prepare / Act
    const t = Template.fromStack(
      buildStack({ store: 'timestream', env: { account: '123456789012', region: 'eu-west-1' } }),
    );

    // Assess
    t.resourceCountIs('AWS::Timestream::Database', 1);
    expect(t.toJSON().Rules?.TimestreamLiveAnalyticsRegion).toBeUndefined();
  });

  it.each(['eu-north-1', 'ap-southeast-1', 'sa-east-1'])(
    'refuses store timestream at synth in %s',
    (region) => {
      // Prepare / Act
      const build = () => buildStack({ store: 'timestream', env: { account: '123456789012', region } });

      // Assess
      expect(build).toThrow(PropsValidationError);
      expect(build).toThrow(
        `Expected \`store\` to be \`athena\` in ${region}: Timestream for LiveAnalytics exists only in us-east-1,`,
      );
    },
  );
});
