import type { Batch } from '../contract';
import {
  type Alert,
  attributeEventsToGpus,
  brokenMarksOf,
  DEFAULT_ALERT_BOUNDS,
  enrichHost,
  evaluatePointRules,
  type Finding,
  judgeWindows,
  priceFor,
  RESOLVING_WINDOW_RULES,
  type RemediationDecision,
  storeRowsOf,
  summaryAlert,
  toAlert,
  windowFiringRecord,
  withBrokenMarks,
} from '../domain';
import { type AlertTally, publishOnce, resolveStopped, withinInstanceBound } from './alert-lifecycle';
import { UnpublishedAlertsError } from './errors';
import { isFault, judgeStorms } from './incidents';
import type { PipelineDeps, ProcessResult } from './pipeline';
import { remediate } from './remediate';

/** Point findings go out most severe first. */
const SEVERITY_ORDER: Readonly<Record<Finding['severity'], number>> = { critical: 0, warning: 1, info: 2 };

/**
 * The ingest pipeline for one validated batch (docs/design.md §1): price the instance, judge the point
 * rules, judge the horizon windows (diagnosis per GPU, window rules), compute the waste ledger of
 * every flush window with its GPU's diagnosis (broken-since from the stored marks and this batch's
 * findings, in memory), write the store, then persist the broken and idle marks, judge whether its
 * faults are part of a storm (then one incident per group and fleet replaces their alerts and
 * remediation pauses), publish alerts (publish-then-record; at most `alertBounds` one by one, the
 * rest in one summary), resolve window alerts that stopped, and decide (and, unless dry-run, carry
 * out) remediation once per batch, for its most severe point fault: a window finding never remediates.
 *
 * Nothing is written before the store write succeeds: if it fails this throws and the agent
 * retries the whole batch, which is idempotent (`seq` is the record version); no broken mark,
 * alert claim or remediation outlives a refused batch. If an alert cannot be published, its lease
 * is freed and this throws {@link UnpublishedAlertsError} after the rest of the batch is done, so
 * the agent's retry sends it (alerts already sent are in their cooldown, not sent twice).
 *
 * @param received - a batch that passed `parseBatch`
 * @param deps - ports and settings
 * @param now - the server's clock
 * @returns counts, findings, alerts sent and remediation decisions
 * @throws {StoreUnavailableError} when the store or the state store is unreachable (the caller answers 503)
 * @throws {InstanceLookupError} when EC2 cannot be asked about the sender (the caller answers 503)
 * @throws {UnpublishedAlertsError} when an alert or resolve message could not be published (the caller answers 5xx)
 */
export async function processBatch(received: Batch, deps: PipelineDeps, now: Date): Promise<ProcessResult> {
  // Server-side enrichment first: team/job/opt-out tags, the real group and instance type from EC2
  // and Auto Scaling, so IMDS tags on the host are optional and the agent's claims are not trusted.
  const instance = deps.instances
    ? await deps.instances.describe(received.host.instance_id, received.host.region)
    : undefined;
  const batch = attributeEventsToGpus(
    instance ? { ...received, host: enrichHost(received.host, instance) } : received,
  );
  const { host } = batch;
  const gpuCount = new Set(batch.windows.filter((w) => w.kind === 'flush').map((w) => w.gpu.index)).size;
  const price = priceFor(host.instance_type, host.region, deps.priceOverrides, gpuCount || undefined, {
    lifecycle: host.lifecycle ?? 'on-demand',
    ...(deps.priceRates !== undefined ? { rates: deps.priceRates } : {}),
  });

  // Most severe first (the order alerts go out); every finding has its own alert id and cooldown.
  const findings = [...evaluatePointRules(batch, deps.rules, now)].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity],
  );
  // One read of the instance's state (broken and idle marks, firing alerts) for the whole batch.
  const state = await deps.state.getInstanceState(host.instance_id);
  const window = judgeWindows(batch, deps.rules, price, state.idle, now);
  // Broken-since for this batch's ledger in memory; the marks are persisted only after the store write.
  const marks = brokenMarksOf(findings);
  const rows = storeRowsOf(batch, {
    price,
    broken: withBrokenMarks(state.broken, marks),
    diagnoses: window.diagnoses,
  });
  const written = await deps.store.write(rows);
  for (const m of marks) await deps.state.markBroken(host.instance_id, m.key, m.at);
  if (written.rejected.length > 0) {
    deps.log.warn('store rejected records', {
      instance_id: host.instance_id,
      seq: batch.seq,
      rejected: written.rejected.length,
      reasons: [...new Set(written.rejected.map((r) => r.reason))].slice(0, 5),
    });
  }

  for (const [key, at] of window.idle.mark) await deps.state.markIdle(host.instance_id, key, at);
  for (const key of window.idle.clear) await deps.state.clearIdle(host.instance_id, key);

  const tally: AlertTally = { sent: [], failed: [] };
  const decisions: RemediationDecision[] = [];
  const send = async (alert: Alert): Promise<boolean> => {
    const outcome = await publishOnce(alert, deps, now);
    if (outcome === 'sent') tally.sent.push(alert);
    if (outcome === 'failed') tally.failed.push(alert);
    return outcome === 'sent';
  };
  // Correlated faults: one incident per group and fleet instead of a page per instance, and no
  // remediation while it lasts (every fault still decided and recorded).
  const pausedBy = await judgeStorms(
    findings.filter(isFault),
    instance ? { ...host, asg_name: instance.asg?.name } : host,
    instance?.asg?.desired_capacity,
    deps,
    now,
    send,
  );
  // Bounded fan-out: point findings (a storm's faults are in its incident), then window findings;
  // past `perBatch`, or past the instance's `perInstance` in the window, they are counted in one summary.
  const bounds = deps.alertBounds ?? DEFAULT_ALERT_BOUNDS;
  const windowFindings = new Set<Finding>(window.findings);
  const alertable = [...findings.filter((f) => !isFault(f) || pausedBy === undefined), ...window.findings];
  const folded = alertable.slice(bounds.perBatch);
  for (const finding of alertable.slice(0, bounds.perBatch)) {
    const alert = toAlert(finding, host);
    const outcome = await publishOnce(
      alert,
      deps,
      now,
      withinInstanceBound(host.instance_id, alert.id, deps, now),
    );
    if (outcome === 'failed') tally.failed.push(alert);
    if (outcome === 'folded') folded.push(finding);
    if (outcome !== 'sent') continue;
    tally.sent.push(alert);
    // Window findings never remediate (efficiency is the owner's to fix), and they resolve.
    if (windowFindings.has(finding) && RESOLVING_WINDOW_RULES.has(finding.rule)) {
      await deps.state.putFiringAlert(windowFiringRecord(alert));
    }
  }
  if (folded.length > 0) await send(summaryAlert(folded, host, bounds));
  // One remediation decision per batch: the most severe fault (a replacement makes a reboot moot,
  // one reboot resets every GPU), however many faults the batch reports.
  const decisive = findings.find((f) => f.action === 'replace') ?? findings.find((f) => f.action === 'reset');
  if (decisive !== undefined) decisions.push(await remediate(decisive, batch, instance, deps, now, pausedBy));
  await resolveStopped(window, state.firing, host, deps, now, tally);
  if (tally.failed.length > 0) {
    const ids = tally.failed.map((a) => a.id);
    throw new UnpublishedAlertsError(
      ids,
      `Expected every alert to publish, ${ids.length} failed (${ids.join(', ')}); the batch is stored, answer 5xx so the agent retries and the alert goes out`,
    );
  }
  deps.log.info('batch accepted', {
    instance_id: host.instance_id,
    seq: batch.seq,
    windows: rows.gpu.length,
    events: rows.events.length,
    findings: findings.length + window.findings.length,
    alerts: tally.sent.length,
    ...(folded.length > 0 ? { alerts_folded: folded.length } : {}),
  });
  return {
    accepted: written.written,
    rejected: written.rejected.length,
    findings: [...findings, ...window.findings],
    diagnoses: window.diagnoses,
    alerts: tally.sent,
    decisions,
    windows: rows.gpu,
  };
}
