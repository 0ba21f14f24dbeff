import { type Batch, type GpuEvent, type GpuWindow, normalizePciBusId } from '../contract';
import {
  type Alert,
  afterFailedCall,
  afterReservation,
  alertId,
  brokenMarksOf,
  computeLedger,
  DEFAULT_REMEDIATION_LIMITS,
  decideRemediation,
  enrichHost,
  escalationId,
  evaluatePointRules,
  type Finding,
  gpuKey,
  groupReplacementLimit,
  MS_PER_SECOND,
  type PriceOverrides,
  priceFor,
  REMEDIATION_LEASE_S,
  type RemediationDecision,
  type RemediationLimits,
  type RemediationMode,
  type RuleContext,
  repeatedEscalation,
  resolveGpuRef,
  type StoreRows,
  toAlert,
  withBrokenMarks,
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
  /** Replacement budgets per group and fleet-wide. @default DEFAULT_REMEDIATION_LIMITS */
  readonly remediationLimits?: RemediationLimits;
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
 * rules, compute the waste ledger of every flush window (broken-since from the stored marks and
 * this batch's findings, in memory), write the store, persist the broken marks, then publish
 * alerts and decide (and, unless dry-run, carry out) remediation.
 *
 * Nothing is written before the store write succeeds: if it fails this throws and the agent
 * retries the whole batch, which is idempotent (`seq` is the record version); no broken mark,
 * alert claim or remediation outlives a refused batch.
 *
 * @param received - a batch that passed `parseBatch`
 * @param deps - ports and settings
 * @param now - the server's clock
 * @returns counts, findings, alerts sent and remediation decisions
 * @throws whatever `store.write` throws when the store is unreachable (the caller answers 503)
 */
export async function processBatch(received: Batch, deps: PipelineDeps, now: Date): Promise<ProcessResult> {
  // Server-side enrichment first: team/job/opt-out tags, the real group and instance type from EC2
  // and Auto Scaling, so IMDS tags on the host are optional and the agent's claims are not trusted.
  const instance = deps.instances
    ? await deps.instances.describe(received.host.instance_id, received.host.region)
    : undefined;
  const batch = instance ? { ...received, host: enrichHost(received.host, instance) } : received;
  const { host } = batch;
  const enriched = attributeEventsToGpus(batch);
  const flush = enriched.windows.filter((w) => w.kind === 'flush');
  const gpuCount = new Set(flush.map((w) => w.gpu.index)).size;
  const price = priceFor(host.instance_type, host.region, deps.priceOverrides, gpuCount || undefined);

  // Most severe first: findings of one GPU share an alert id, and the cooldown lets the first through.
  const findings = [...evaluatePointRules(enriched, deps.rules, now)].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity],
  );
  // Broken-since for this batch's ledger in memory; the marks are persisted only after the store write.
  const marks = brokenMarksOf(findings);
  const broken = withBrokenMarks(await deps.state.getBrokenSince(host.instance_id), marks);

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
  for (const m of marks) await deps.state.markBroken(host.instance_id, m.key, m.at);
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
 * Decides remediation for one finding through the domain policy, reserves it atomically within the
 * group and fleet budgets, carries it out unless dry-run, and only then confirms it; a failed call
 * releases the reservation (so the next batch retries) and escalates. An escalation pages once per
 * instance and cooldown. With enrichment (`instance`), the group, its desired capacity and tags come
 * from Auto Scaling, not from what the agent says about itself.
 */
async function remediate(
  finding: Finding,
  batch: Batch,
  instance: InstanceInfo | undefined,
  deps: PipelineDeps,
  now: Date,
): Promise<RemediationDecision> {
  const host = instance ? { ...batch.host, asg_name: instance.asg?.name } : batch.host;
  const limits = deps.remediationLimits ?? DEFAULT_REMEDIATION_LIMITS;
  const desired = instance?.asg?.desired_capacity;
  const since = new Date(now.getTime() - limits.windowS * MS_PER_SECOND);
  let decision = decideRemediation(
    {
      finding,
      alertId: alertId(finding),
      host,
      mode: deps.remediationMode,
      existing: await deps.state.getRemediation(host.instance_id),
      recentInGroup: host.asg_name ? await deps.state.listRemediations(host.asg_name, since) : [],
      groupDesiredCapacity: desired,
      groupTags: instance?.asg?.tags,
      limits,
      dryRun: deps.dryRun,
    },
    now,
  );
  if (decision.action === 'replace' || decision.action === 'quarantine') {
    const record = {
      instance_id: host.instance_id,
      ...(host.asg_name === undefined ? {} : { asg_name: host.asg_name }),
      action: decision.action,
      at: decision.at,
      rule: decision.rule,
    };
    const reservation = await deps.state.reserveRemediation({
      record,
      budget: {
        groupLimit: groupReplacementLimit(limits, desired).limit,
        fleetLimit: limits.maxFleetPerWindow,
        windowS: limits.windowS,
      },
      leaseS: REMEDIATION_LEASE_S,
    });
    decision = afterReservation(decision, reservation, limits, desired);
    if (reservation.granted) {
      try {
        if (!deps.dryRun) {
          if (decision.action === 'replace') await deps.remediator.replace(decision);
          else await deps.remediator.quarantine(decision);
        }
      } catch (err) {
        deps.log.error('remediation failed; escalating to a human', {
          instance_id: host.instance_id,
          action: decision.action,
          error: (err as Error).message,
        });
        await deps.state.releaseRemediation(record, reservation.leaseId);
        decision = afterFailedCall(decision, (err as Error).message);
      }
      if (decision.action !== 'escalate') await deps.state.confirmRemediation(record, reservation.leaseId);
    }
  }
  if (decision.action === 'escalate') {
    const cooldownS = deps.alertCooldownS ?? DEFAULT_ALERT_COOLDOWN_S;
    const id = escalationId(host.instance_id);
    if (await deps.state.claimAlert(id, decision.at, cooldownS)) {
      try {
        await deps.decisions.record(decision);
      } catch (err) {
        // The page did not go out: give the claim back so the agent's retry pages instead.
        await deps.state.releaseAlert(id, decision.at);
        throw err;
      }
      return decision;
    }
    decision = repeatedEscalation(decision, cooldownS);
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
