import { type MessageAttributeValue, PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { AlertSink } from '../domain/ports';
import type { Alert, Severity } from '../domain/types';
import { AlertPublishError } from './errors';
import { toSnsSubject } from './sns-subject';

/** SNS topic ARNs by alert severity (docs/design.md §7). */
export type SeverityTopicArns = { readonly [S in Severity]: string };

/** Options of {@link SnsAlertSink}. */
export interface SnsAlertSinkOptions {
  readonly client: SNSClient;
  /** Topic ARN per severity: `critical`, `warning`, `info`. */
  readonly topics: SeverityTopicArns;
}

/**
 * SNS message attributes from string pairs; empty values are left out (SNS refuses an empty
 * `StringValue`).
 *
 * @param attributes - name → value
 * @returns `{ name: { DataType: 'String', StringValue } }`
 */
export function toMessageAttributes(
  attributes: Readonly<Record<string, string>>,
): Record<string, MessageAttributeValue> {
  const out: Record<string, MessageAttributeValue> = {};
  for (const [name, value] of Object.entries(attributes)) {
    if (value !== '') out[name] = { DataType: 'String', StringValue: value };
  }
  return out;
}

/**
 * Publishes alerts to the SNS topic of their severity: `Subject` (≤ 100 printable ASCII
 * characters, sanitized), `Message` = the alert body, `MessageAttributes` = the alert attributes
 * (`severity`, `rule`, `instance_type`, `team`) so teams subscribe with a filter policy.
 *
 * @example
 * const sink = new SnsAlertSink({ client: new SNSClient({}), topics: { critical, warning, info } });
 * await sink.publish(alert);
 */
export class SnsAlertSink implements AlertSink {
  readonly #client: SNSClient;
  readonly #topics: SeverityTopicArns;

  /** @param options - client and topic ARNs */
  constructor(options: SnsAlertSinkOptions) {
    this.#client = options.client;
    this.#topics = options.topics;
  }

  /**
   * @param alert - the alert to send
   * @throws {AlertPublishError} when SNS refuses or cannot be reached
   */
  async publish(alert: Alert): Promise<void> {
    const topicArn = this.#topics[alert.finding.severity];
    try {
      await this.#client.send(
        new PublishCommand({
          TopicArn: topicArn,
          Subject: toSnsSubject(alert.subject),
          Message: alert.body,
          MessageAttributes: toMessageAttributes(alert.attributes),
        }),
      );
    } catch (error) {
      throw new AlertPublishError(
        topicArn,
        `expected SNS to publish alert ${alert.id}, it failed; retry or check the topic policy`,
        { cause: error },
      );
    }
  }
}
