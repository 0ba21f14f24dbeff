import { appendFile } from 'node:fs/promises';
import type { DecisionSink } from '../domain/ports';
import type { RemediationDecision } from '../domain/types';

/**
 * Local-mode remediation audit: appends every decision (done, skipped, escalated, and why) as one
 * JSON object per line to `remediation.jsonl`: `rule`, `severity`, `instance_id`, `gpu_index`,
 * `action`, `reason`, `asg_name`, `alert_id`, `at`, `dry_run`, and for a grace period's `scheduled`
 * and `cancelled` decisions `pending` (`action`, `decided_at`, `due_at`).
 */
export class JsonlDecisionSink implements DecisionSink {
  /** Decisions recorded so far, in order. */
  readonly recorded: RemediationDecision[] = [];

  /** @param jsonlPath - file to append to (created if missing) */
  constructor(private readonly jsonlPath: string) {}

  async record(decision: RemediationDecision): Promise<void> {
    this.recorded.push(decision);
    const line = {
      rule: decision.rule,
      severity: decision.severity,
      instance_id: decision.instance_id,
      gpu_index: decision.gpu_index ?? null,
      action: decision.action,
      reason: decision.reason,
      asg_name: decision.asg_name ?? null,
      alert_id: decision.alert_id,
      at: decision.at,
      dry_run: decision.dry_run,
      ...(decision.pending === undefined ? {} : { pending: decision.pending }),
    };
    await appendFile(this.jsonlPath, `${JSON.stringify(line)}\n`);
  }
}
