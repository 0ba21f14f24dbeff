import { handlerFromEnvironment } from '../../../lambdas/handlers/ingest';
import type { IngestHandler } from '../../../lambdas/handlers/ingest-handler';
import { CANNED_ACCOUNT, CANNED_ROLE, CannedAwsHandler } from '../adapters/canned-aws-handler';
import { INSTANCE_ID } from './proxy-event';

/** The caller API Gateway reports for the agent of {@link INSTANCE_ID} (its instance-profile session). */
export const CANNED_CALLER = `arn:aws:sts::${CANNED_ACCOUNT}:assumed-role/${CANNED_ROLE}/${INSTANCE_ID}`;

/**
 * The environment the stack gives the ingest Lambda, for `store`, with names of the canned account.
 * @param store - `athena` (default) or `timestream`
 */
export function cannedEnvironment(store = 'athena'): NodeJS.ProcessEnv {
  return {
    STORE: store,
    FIREHOSE_GPU_STREAM: 'gpu-sentinel-gpu-windows',
    FIREHOSE_EFA_STREAM: 'gpu-sentinel-efa-windows',
    FIREHOSE_EVENTS_STREAM: 'gpu-sentinel-events',
    ATHENA_DATABASE: 'gpu_sentinel',
    ATHENA_WORKGROUP: 'gpu-sentinel',
    TIMESTREAM_DATABASE: 'gpu_sentinel',
    TIMESTREAM_GPU_TABLE: 'gpu_windows',
    TIMESTREAM_EFA_TABLE: 'efa_windows',
    TIMESTREAM_EVENTS_TABLE: 'events',
    TOPIC_CRITICAL_ARN: `arn:aws:sns:us-east-1:${CANNED_ACCOUNT}:critical`,
    TOPIC_WARNING_ARN: `arn:aws:sns:us-east-1:${CANNED_ACCOUNT}:warning`,
    TOPIC_INFO_ARN: `arn:aws:sns:us-east-1:${CANNED_ACCOUNT}:info`,
    STATE_TABLE: 'gpu-sentinel-state',
    REMEDIATION_MODE: 'replace',
    POWERTOOLS_SERVICE_NAME: 'gpu-sentinel-ingest',
  };
}

/**
 * The production ingest handler (`handlerFromEnvironment`) on real SDK clients whose HTTP answers
 * come from a {@link CannedAwsHandler}: what the benchmark measures and the wire tests inspect.
 *
 * @param env - the Lambda environment. @default cannedEnvironment()
 * @returns the handler and the canned AWS it talks to
 */
export function cannedIngest(env: NodeJS.ProcessEnv = cannedEnvironment()): {
  readonly handler: IngestHandler;
  readonly aws: CannedAwsHandler;
} {
  const aws = new CannedAwsHandler();
  const handler = handlerFromEnvironment(env, CANNED_ACCOUNT, {
    region: 'us-east-1',
    credentials: { accessKeyId: 'AKIDEXAMPLE', secretAccessKey: 'canned-secret' },
    requestHandler: aws,
  });
  return { handler, aws };
}
