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
});
