import { type Batch, type GpuEvent, type GpuWindow, normalizePciBusId } from '../contract';
import {
  type Alert,
  alertId,
  computeLedger,
  decideRemediation,
  evaluatePointRules,
  type Finding,
  gpuKey,
  type PriceOverrides,
  type PriceRates,
  priceFor,
  type RemediationDecision,
  type RemediationMode,
  type RuleContext,
  resolveGpuRef,
  type StoreRows,
  toAlert,
} from '../domain';
import type {
  AlertSink,
  DecisionSink,
  InstanceDirectory,
  Remediator,
  StateStore,
  TelemetryStore,
} from '../domain/ports';
import type { InstanceInfo } from '../domain/types';
import type { Log } from './log';

/** Everything `processBatch` needs from the outside, injected. */
export interface PipelineDeps {
  readonly store: TelemetryStore;
  readonly state: StateStore;
  readonly alerts: AlertSink;
  readonly decisions: DecisionSink;
  readonly remediator: Remediator;
  readonly log: Log;
  /** Remediation mode (DESIGN §8). */
  readonly remediationMode: RemediationMode;
  /** True when remediations are decided and recorded but never executed (local mode). */
  readonly dryRun: boolean;
  /** Negotiated prices by instance type, USD/hour. @default {} */
  readonly priceOverrides?: PriceOverrides;
  /**
   * The deployment's Capacity Block, Savings Plans and spot rates; a spot host without a spot rate or
   * discount is unpriced, never billed at on-demand. @default {}
   */
  readonly priceRates?: PriceRates;
  /** Rule thresholds and XID policy. */
  readonly rules: RuleContext;
  /** An alert that is still firing is sent again after this many seconds. @default 3600 */
  readonly alertCooldownS?: number;
  /**
   * What EC2 and Auto Scaling say about the sender (server-side enrichment): the real Auto Scaling
   * group, its desired capacity and tags for the remediation policy. @default undefined (trust the
   * batch's `host`; local mode)
   */
  readonly instances?: InstanceDirectory;
}

/** What `processBatch` did with one batch. */
export interface ProcessResult {
  /** Windows + EFA windows + events stored. */
  readonly accepted: number;
  /** Records the store refused (logged with their reasons). */
  readonly rejected: number;
  readonly findings: readonly Finding[];
  /** Alerts published (after cooldown). */
  readonly alerts: readonly Alert[];
  readonly decisions: readonly RemediationDecision[];
}

const SEVERITY_ORDER: Readonly<Record<Finding['severity'], number>> = { critical: 0, warning: 1, info: 2 };

/** Default re-send interval of a still-firing alert, s. */
export const DEFAULT_ALERT_COOLDOWN_S = 3600;

/**
 * The ingest pipeline for one validated batch (DESIGN §1): price the instance, judge the point
 * rules, mark broken GPUs, compute the waste ledger of every flush window, write the store, then
 * publish alerts and decide (and, unless dry-run, carry out) remediation.
 *
 * The store is written before any alert or remediation: if it is down this throws and the agent
 * retries the whole batch, which is idempotent (`seq` is the record version).
 *
 * @param batch - a batch that passed `parseBatch`
 * @param deps - ports and settings
 * @param now - the server's clock
 * @returns counts, findings, alerts sent and remediation decisions
 * @throws whatever `store.write` throws when the store is unreachable (the caller answers 503)
 */
export async function processBatch(batch: Batch, deps: PipelineDeps, now: Date): Promise<ProcessResult> {
  const { host } = batch;
  const enriched = attributeEventsToGpus(batch);
  const flush = enriched.windows.filter((w) => w.kind === 'flush');
  const gpuCount = new Set(flush.map((w) => w.gpu.index)).size;
  const price = priceFor(host.instance_type, host.region, deps.priceOverrides, gpuCount || undefined, {
    lifecycle: host.lifecycle ?? 'on-demand',
    ...(deps.priceRates !== undefined ? { rates: deps.priceRates } : {}),
  });

  // Most severe first: findings of one GPU share an alert id, and the cooldown lets the first through.
  const findings = [...evaluatePointRules(enriched, deps.rules, now)].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity],
  );
  for (const f of findings) {
    if (f.action === 'replace') await deps.state.markBroken(host.instance_id, gpuKey(f), f.at);
  }
  const broken = await deps.state.getBrokenSince(host.instance_id);
  const instance = deps.instances ? await deps.instances.describe(host.instance_id, host.region) : undefined;

  const rows: StoreRows = {
    gpu: flush.map((w) => ({
      time: w.end,
      start: w.start,
      instance_id: host.instance_id,
      instance_type: host.instance_type,
      region: host.region,
      az: host.az,
      gpu_index: w.gpu.index,
      gpu_uuid: w.gpu.uuid,
      gpu_name: w.gpu.name,
      team: host.tags?.team,
      job: host.tags?.job,
      batch_id: batch.batch_id,
      seq: batch.seq,
      metrics: w.metrics,
      ledger: computeLedger(w, price, { brokenSince: brokenSinceFor(broken, w) }),
    })),
    efa: (enriched.efa ?? []).map((e) => ({
      time: e.end,
      start: e.start,
      instance_id: host.instance_id,
      instance_type: host.instance_type,
      device: e.device,
      port: e.port,
      seq: batch.seq,
      deltas: e.deltas,
    })),
    events: (enriched.events ?? []).map((e) => ({
      time: e.at,
      instance_id: host.instance_id,
      instance_type: host.instance_type,
      gpu_index: e.gpu_index,
      pci_bus_id: e.pci_bus_id,
      kind: e.kind,
      xid: e.xid,
      source: e.source,
      pid: e.pid,
      process_name: e.process_name,
      detail: e.detail,
      batch_id: batch.batch_id,
      seq: batch.seq,
    })),
  };
  const written = await deps.store.write(rows);
  if (written.rejected.length > 0) {
    deps.log.warn('store rejected records', {
      instance_id: host.instance_id,
      seq: batch.seq,
      rejected: written.rejected.length,
      reasons: [...new Set(written.rejected.map((r) => r.reason))].slice(0, 5),
    });
  }

  const sent: Alert[] = [];
  const decisions: RemediationDecision[] = [];
  const nowIso = now.toISOString();
  for (const finding of findings) {
    const alert = toAlert(finding, host);
    if (await deps.state.claimAlert(alert.id, nowIso, deps.alertCooldownS ?? DEFAULT_ALERT_COOLDOWN_S)) {
      await deps.alerts.publish(alert);
      sent.push(alert);
    }
    if (finding.action === 'replace' || finding.action === 'reset') {
      decisions.push(await remediate(finding, batch, instance, deps, now));
    }
  }
  deps.log.info('batch accepted', {
    instance_id: host.instance_id,
    seq: batch.seq,
    windows: rows.gpu.length,
    events: rows.events.length,
    findings: findings.length,
    alerts: sent.length,
  });
  return {
    accepted: written.written,
    rejected: written.rejected.length,
    findings,
    alerts: sent,
    decisions,
  };
}

/**
 * Decides remediation for one finding through the domain policy, then carries it out unless dry-run.
 * With enrichment (`instance`), the group, its desired capacity and tags come from Auto Scaling, not
 * from what the agent says about itself.
 */
async function remediate(
  finding: Finding,
  batch: Batch,
  instance: InstanceInfo | undefined,
  deps: PipelineDeps,
  now: Date,
): Promise<RemediationDecision> {
  const host = instance ? { ...batch.host, asg_name: instance.asg?.name } : batch.host;
  const hourAgo = new Date(now.getTime() - 3600_000);
  let decision = decideRemediation(
    {
      finding,
      alertId: alertId(finding),
      host,
      mode: deps.remediationMode,
      existing: await deps.state.getRemediation(host.instance_id),
      recentInGroup: host.asg_name ? await deps.state.listRemediations(host.asg_name, hourAgo) : [],
      groupDesiredCapacity: instance?.asg?.desired_capacity,
      groupTags: instance?.asg?.tags,
      dryRun: deps.dryRun,
    },
    now,
  );
  if (decision.action === 'replace' || decision.action === 'quarantine') {
    const claimed = await deps.state.putRemediationIfAbsent({
      instance_id: host.instance_id,
      asg_name: host.asg_name,
      action: decision.action,
      at: decision.at,
      rule: decision.rule,
    });
    if (!claimed) {
      decision = {
        ...decision,
        action: 'skip',
        reason: 'another invocation already remediated this instance',
      };
    } else if (!deps.dryRun) {
      try {
        if (decision.action === 'replace') await deps.remediator.replace(decision);
        else await deps.remediator.quarantine(decision);
      } catch (err) {
        deps.log.error('remediation failed; escalating to a human', {
          instance_id: host.instance_id,
          action: decision.action,
          error: (err as Error).message,
        });
        decision = {
          ...decision,
          action: 'escalate',
          reason: `${decision.action} could not be done safely (${(err as Error).message}); a human must act`,
        };
      }
    }
  }
  await deps.decisions.record(decision);
  return decision;
}

function brokenSinceFor(broken: ReadonlyMap<string, string>, w: GpuWindow): string | undefined {
  const candidates = [
    broken.get(String(w.gpu.index)),
    broken.get(gpuKey({ pci_bus_id: normalizePciBusId(w.gpu.pci_bus_id) })),
    broken.get('*'),
  ].filter((t): t is string => t !== undefined);
  return candidates.sort()[0];
}

/**
 * Gives kernel-log events (which know only the PCI bus id) the GPU index of the window with the
 * same bus id (and the other way round), so rules, alerts, the store and the ledger see one GPU
 * under one key.
 */
function attributeEventsToGpus(batch: Batch): Batch {
  if (!batch.events?.length || batch.windows.length === 0) return batch;
  const events: GpuEvent[] = batch.events.map((e) => ({
    ...e,
    ...resolveGpuRef(batch, e.gpu_index, e.pci_bus_id),
  }));
  return { ...batch, events };
}
