import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { ReportNotifier } from '../domain/ports';

/** Options of {@link SnsReportNotifier}. */
export interface SnsReportNotifierOptions {
  readonly client: SNSClient;
  /** ARN of the `reports` topic. */
  readonly topicArn: string;
}

/**
 * Publishes the report message on the `reports` SNS topic: `Subject` (≤ 100 characters, the email
 * subject), plain-text `Message`, and String message attributes so a subscriber can filter (e.g. on
 * `report_period`).
 */
export class SnsReportNotifier implements ReportNotifier {
  readonly #opts: SnsReportNotifierOptions;

  /** @param opts - client and topic */
  constructor(opts: SnsReportNotifierOptions) {
    this.#opts = opts;
  }

  /**
   * @param message - subject and body
   * @param attributes - String message attributes
   * @throws whatever `Publish` throws
   */
  async publish(
    message: { readonly subject: string; readonly body: string },
    attributes: Readonly<Record<string, string>>,
  ): Promise<void> {
    await this.#opts.client.send(
      new PublishCommand({
        TopicArn: this.#opts.topicArn,
        Subject: message.subject,
        Message: message.body,
        MessageAttributes: Object.fromEntries(
          Object.entries(attributes).map(([k, v]) => [k, { DataType: 'String', StringValue: v }]),
        ),
      }),
    );
  }
}
