import { PublishCommand, type SNSClient } from '@aws-sdk/client-sns';
import type { DecisionSink } from '../domain/ports';
import type { RemediationAction, RemediationDecision } from '../domain/types';
import { AlertPublishError } from './errors';
import type { SeverityTopicArns } from './sns-alert-sink';
import { toMessageAttributes } from './sns-alert-sink';
import { toSnsSubject } from './sns-subject';

/** Options of {@link SnsDecisionSink}. */
export interface SnsDecisionSinkOptions {
  readonly client: SNSClient;
  /** Topic ARNs: `critical` gets reboot/replace/quarantine/escalate, `info` the rest. */
  readonly topics: Pick<SeverityTopicArns, 'critical' | 'info'>;
}

/** Actions a human must know about at once (sent to the critical topic). */
const CRITICAL_ACTIONS: ReadonlySet<RemediationAction> = new Set([
  'reboot',
  'replace',
  'quarantine',
  'escalate',
]);

/**
 * The plain-text body of a decision message.
 *
 * @param d - the decision
 * @returns lines `what: value`, the reason included
 */
export function decisionBody(d: RemediationDecision): string {
  return [
    `Remediation decision: ${d.action}${d.dry_run ? ' (dry run: nothing was executed)' : ''}`,
    `Instance: ${d.instance_id}${d.gpu_index === undefined ? '' : `, GPU ${d.gpu_index}`}`,
    `Auto Scaling group: ${d.asg_name ?? 'none'}`,
    `Rule: ${d.rule} (${d.severity})`,
    `Reason: ${d.reason}`,
    `Alert: ${d.alert_id}`,
    `At: ${d.at}`,
  ].join('\n');
}

/**
 * Publishes every remediation decision (the audit trail, docs/design.md §8): reboot, replace, quarantine and
 * escalate to the critical topic, notify and skip to info; subject like
 * `gpu-sentinel replace i-0abc (xid_fatal)`, a plain-text body with the reason, and attributes
 * `severity`, `rule`, `action`.
 */
export class SnsDecisionSink implements DecisionSink {
  readonly #client: SNSClient;
  readonly #topics: Pick<SeverityTopicArns, 'critical' | 'info'>;

  /** @param options - client and topic ARNs */
  constructor(options: SnsDecisionSinkOptions) {
    this.#client = options.client;
    this.#topics = options.topics;
  }

  /**
   * @param decision - the decision to record
   * @throws {AlertPublishError} when SNS refuses or cannot be reached
   */
  async record(decision: RemediationDecision): Promise<void> {
    const topicArn = CRITICAL_ACTIONS.has(decision.action) ? this.#topics.critical : this.#topics.info;
    const gpu = decision.gpu_index === undefined ? '' : ` GPU ${decision.gpu_index}`;
    const dry = decision.dry_run ? ' [dry run]' : '';
    try {
      await this.#client.send(
        new PublishCommand({
          TopicArn: topicArn,
          Subject: toSnsSubject(
            `gpu-sentinel ${decision.action} ${decision.instance_id}${gpu} (${decision.rule})${dry}`,
          ),
          Message: decisionBody(decision),
          MessageAttributes: toMessageAttributes({
            severity: decision.severity,
            rule: decision.rule,
            action: decision.action,
          }),
        }),
      );
    } catch (error) {
      throw new AlertPublishError(
        topicArn,
        `expected SNS to publish the ${decision.action} decision for ${decision.instance_id}, it failed; retry or check the topic policy`,
        { cause: error },
      );
    }
  }
}
