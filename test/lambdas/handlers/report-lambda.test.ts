import { describe, expect, it } from 'vitest';
import { IngestConfigError } from '../../../lambdas/handlers/environment';
import { reportHandlerFromEnvironment } from '../../../lambdas/handlers/report';

const ENV = {
  STORE: 'timestream',
  TIMESTREAM_DATABASE: 'gpu_sentinel',
  TIMESTREAM_GPU_TABLE: 'gpu_windows',
  TIMESTREAM_EFA_TABLE: 'efa_windows',
  TIMESTREAM_EVENTS_TABLE: 'events',
  REPORTS_BUCKET: 'gpu-sentinel-reports',
  REPORTS_KEY_ARN: 'arn:aws:kms:us-east-1:123456789012:key/0f6b0c4e-1111-4222-8333-444455556666',
  TOPIC_REPORTS_ARN: 'arn:aws:sns:us-east-1:123456789012:gpu-sentinel-reports',
  AWS_REGION: 'us-east-1',
};

describe('report Lambda entry', () => {
  it('builds the handler from the environment the stack sets', () => {
    // Prepare / Act / Assess
    expect(typeof reportHandlerFromEnvironment(ENV)).toBe('function');
  });

  it.each(Object.keys(ENV).filter((k) => k !== 'AWS_REGION'))('names %s when it is missing', (name) => {
    // Prepare
    const env: Record<string, string> = { ...ENV };
    delete env[name];
    // Act / Assess
    expect(() => reportHandlerFromEnvironment(env)).toThrow(IngestConfigError);
    expect(() => reportHandlerFromEnvironment(env)).toThrow(name);
  });

  const ATHENA_ENV = {
    ...ENV,
    STORE: 'athena',
    FIREHOSE_GPU_STREAM: 'gpu-sentinel-gpu-windows',
    FIREHOSE_EFA_STREAM: 'gpu-sentinel-efa-windows',
    FIREHOSE_EVENTS_STREAM: 'gpu-sentinel-events',
    ATHENA_DATABASE: 'gpu_sentinel',
    ATHENA_WORKGROUP: 'gpu-sentinel',
  };

  it('builds the handler with the CUR table of a CUR 2.0 export on the Athena store', () => {
    // Prepare / Act / Assess
    expect(
      typeof reportHandlerFromEnvironment({ ...ATHENA_ENV, CUR_DATABASE: 'cur', CUR_TABLE: 'gpu_fleet' }),
    ).toBe('function');
  });

  it.each([
    ['only CUR_DATABASE', { ...ATHENA_ENV, CUR_DATABASE: 'cur' }, /CUR_DATABASE and CUR_TABLE together/],
    ['only CUR_TABLE', { ...ATHENA_ENV, CUR_TABLE: 'gpu_fleet' }, /got only CUR_TABLE/],
    [
      'a CUR on the Timestream store',
      { ...ENV, CUR_DATABASE: 'cur', CUR_TABLE: 'gpu_fleet' },
      /STORE=athena/,
    ],
    [
      'a CUR table that is not a Glue name',
      { ...ATHENA_ENV, CUR_DATABASE: 'cur', CUR_TABLE: 'x"; DROP' },
      /curTable/,
    ],
  ])('refuses %s', (_name, env, message) => {
    // Prepare / Act / Assess
    expect(() => reportHandlerFromEnvironment(env)).toThrow(message);
  });
});
