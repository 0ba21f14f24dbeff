import { describe, expect, it } from 'vitest';
import { RuleThresholdsError } from '../../../lambdas/domain';
import { IngestConfigError } from '../../../lambdas/handlers/environment';
import { fleetEvaluatorFromEnvironment } from '../../../lambdas/handlers/fleet-evaluator';

const ENV = {
  STORE: 'timestream',
  TIMESTREAM_DATABASE: 'gpu_sentinel',
  TIMESTREAM_GPU_TABLE: 'gpu_windows',
  TIMESTREAM_EFA_TABLE: 'efa_windows',
  TIMESTREAM_EVENTS_TABLE: 'events',
  STATE_TABLE: 'gpu-sentinel-state',
  TOPIC_CRITICAL_ARN: 'arn:aws:sns:us-east-1:123456789012:critical',
  TOPIC_WARNING_ARN: 'arn:aws:sns:us-east-1:123456789012:warning',
  TOPIC_INFO_ARN: 'arn:aws:sns:us-east-1:123456789012:info',
  FLEET_REGIONS: 'us-east-1,eu-north-1',
};

describe('fleet evaluator Lambda entry', () => {
  it('builds the evaluator from the environment the stack sets', () => {
    // Prepare / Act / Assess
    expect(typeof fleetEvaluatorFromEnvironment(ENV)).toBe('function');
  });

  it('falls back to the Lambda region when FLEET_REGIONS is unset, and names AWS_REGION when both are', () => {
    // Prepare
    const { FLEET_REGIONS: _, ...rest } = ENV;
    // Act / Assess
    expect(typeof fleetEvaluatorFromEnvironment({ ...rest, AWS_REGION: 'us-east-1' })).toBe('function');
    expect(() => fleetEvaluatorFromEnvironment(rest)).toThrow(/AWS_REGION/);
  });

  it.each(['STORE', 'STATE_TABLE', 'TOPIC_CRITICAL_ARN', 'TOPIC_WARNING_ARN', 'TOPIC_INFO_ARN'])(
    'names %s when it is missing',
    (name) => {
      // Prepare
      const env: Record<string, string> = { ...ENV };
      delete env[name];
      // Act / Assess
      expect(() => fleetEvaluatorFromEnvironment(env)).toThrow(IngestConfigError);
      expect(() => fleetEvaluatorFromEnvironment(env)).toThrow(name);
    },
  );

  it('refuses malformed RULE_THRESHOLDS, naming the key', () => {
    // Act / Assess
    expect(() =>
      fleetEvaluatorFromEnvironment({ ...ENV, RULE_THRESHOLDS: '{"agentSilentAfterS": 5}' }),
    ).toThrow(RuleThresholdsError);
  });

  const ATHENA_ENV = {
    ...ENV,
    STORE: 'athena',
    FIREHOSE_GPU_STREAM: 'gpu-sentinel-gpu',
    FIREHOSE_EFA_STREAM: 'gpu-sentinel-efa',
    FIREHOSE_EVENTS_STREAM: 'gpu-sentinel-events',
    ATHENA_DATABASE: 'gpu_sentinel',
    ATHENA_WORKGROUP: 'gpu-sentinel',
  };

  it('builds the evaluator with the CUR table of CUR_DATABASE and CUR_TABLE on the Athena store', () => {
    // Prepare / Act / Assess
    expect(
      typeof fleetEvaluatorFromEnvironment({ ...ATHENA_ENV, CUR_DATABASE: 'cur', CUR_TABLE: 'cur_export' }),
    ).toBe('function');
  });

  it.each([
    ['only CUR_DATABASE', { ...ATHENA_ENV, CUR_DATABASE: 'cur' }, /CUR_DATABASE and CUR_TABLE together/],
    [
      'a CUR on the Timestream store',
      { ...ENV, CUR_DATABASE: 'cur', CUR_TABLE: 'cur_export' },
      /STORE=athena/,
    ],
  ])('refuses %s at cold start', (_label, env, message) => {
    // Act / Assess
    expect(() => fleetEvaluatorFromEnvironment(env)).toThrow(IngestConfigError);
    expect(() => fleetEvaluatorFromEnvironment(env)).toThrow(message);
  });

  it('refuses a CUR table name that is not a Glue name, naming the setting', () => {
    // Act / Assess
    expect(() =>
      fleetEvaluatorFromEnvironment({ ...ATHENA_ENV, CUR_DATABASE: 'cur', CUR_TABLE: 'cur"; DROP' }),
    ).toThrow(/curTable/);
  });
});
