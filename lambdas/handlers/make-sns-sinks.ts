import { SNSClient } from '@aws-sdk/client-sns';
import { type SeverityTopicArns, SnsAlertSink } from '../adapters/sns-alert-sink';
import { SnsDecisionSink } from '../adapters/sns-decision-sink';
import type { AlertSink, DecisionSink } from '../domain/ports';
import { leanClient, type SdkClientConfig } from './sdk-client-config';

/** Where the ingest Lambda publishes alerts and remediation decisions. */
export interface SnsSinks {
  readonly alerts: AlertSink;
  readonly decisions: DecisionSink;
}

/**
 * Builds the alert and decision sinks on one SNS client. Its own module so the ingest Lambda loads
 * the SNS client with `import()` on the first alert or decision (most batches publish nothing).
 *
 * @param topics - topic ARN per severity; decisions go to `critical` (escalations) and `info`
 * @param sdk - settings given to the client
 * @returns the two sinks
 */
export function makeSnsSinks(topics: SeverityTopicArns, sdk: SdkClientConfig): SnsSinks {
  const client = leanClient((config) => new SNSClient(config), sdk);
  return {
    alerts: new SnsAlertSink({ client, topics }),
    decisions: new SnsDecisionSink({ client, topics: { critical: topics.critical, info: topics.info } }),
  };
}
