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
  evaluateWindowRules,
  type Finding,
  type FiringAlert,
  gpuKey,
  groupReplacementLimit,
  type IdleSinceUpdate,
  type InstancePrice,
  judgedHorizons,
  MS_PER_SECOND,
  nextIdleSince,
  type PriceOverrides,
  type PriceRates,
  priceFor,
  REMEDIATION_LEASE_S,
  RESOLVING_WINDOW_RULES,
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
  InstanceState,
  Remediator,
  StateStore,
  TelemetryStore,
} from '../domain/ports';
import type { Diagnosis, GpuWindowRow, InstanceInfo } from '../domain/types';
import { AlertPublishError } from './errors';
import type { Log } from './log';

/** Everything `processBatch` needs from the outside, injected. */
export interface PipelineDeps {
  readonly store: TelemetryStore;
  readonly state: StateStore;
  readonly alerts: AlertSink;
  readonly decisions: DecisionSink;
  readonly remediator: Remediator;
  readonly log: Log;
  /** Remediation mode (docs/design.md §8). */
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
  /** Replacement budgets per group and fleet-wide. @default DEFAULT_REMEDIATION_LIMITS */
  readonly remediationLimits?: RemediationLimits;
}

/** What `processBatch` did with one batch. */
export interface ProcessResult {
  /** Windows + EFA windows + events stored. */
  readonly accepted: number;
  /** Records the store refused (logged with their reasons). */
  readonly rejected: number;
  /** Point findings (most severe first), then window findings (in `WINDOW_RULES` order). */
  readonly findings: readonly Finding[];
  /** GPU index → the diagnosis of its judged horizon (stored with its flush windows); empty without one. */
  readonly diagnoses: ReadonlyMap<number, Diagnosis>;
  /** Alerts published (after cooldown), resolve messages included (`status: 'resolved'`). */
  readonly alerts: readonly Alert[];
  readonly decisions: readonly RemediationDecision[];
  /** The GPU flush-window rows written (metrics, ledger, enriched team): what ingest's CloudWatch metrics are computed from. */
  readonly windows: readonly GpuWindowRow[];
}

const SEVERITY_ORDER: Readonly<Record<Finding['severity'], number>> = { critical: 0, warning: 1, info: 2 };

/** Default re-send interval of a still-firing alert, s. */
export const DEFAULT_ALERT_COOLDOWN_S = 3600;

/**
 * How long an alert lease lasts, s: longer than the ingest Lambda's timeout, so a lease is only ever
 * taken over from an invocation that crashed between lease and publish; its alert then goes out with
 * the next batch that still has the finding.
 */
export const ALERT_LEASE_S = 120;

/**
 * After a window alert resolves, a return of its condition is sent as a new episode once this many
 * seconds have passed, s (capped at the cooldown): one horizon, so a metric hovering at its threshold
 * sends at most one fire/resolve pair per 15 min instead of one per batch.
 */
export const ALERT_REARM_S = 900;

/**
 * The ingest pipeline for one validated batch (docs/design.md §1): price the instance, judge the point
 * rules, judge the horizon windows (diagnosis per GPU, window rules), compute the waste ledger of
 * every flush window with its GPU's diagnosis (broken-since from the stored marks and this batch's
 * findings, in memory), write the store, then persist the broken and idle marks, publish alerts
 * (publish-then-record), resolve window alerts that stopped, and decide (and, unless dry-run, carry
 * out) remediation for point findings only: a window finding never remediates.
 *
 * Nothing is written before the store write succeeds: if it fails this throws and the agent
 * retries the whole batch, which is idempotent (`seq` is the record version); no broken mark,
 * alert claim or remediation outlives a refused batch. If an alert cannot be published, its lease
 * is freed and this throws {@link AlertPublishError} after the rest of the batch is done, so the
 * agent's retry sends it (alerts already sent are in their cooldown, not sent twice).
 *
 * @param received - a batch that passed `parseBatch`
 * @param deps - ports and settings
 * @param now - the server's clock
 * @returns counts, findings, alerts sent and remediation decisions
 * @throws whatever `store.write` throws when the store is unreachable (the caller answers 503)
 * @throws {AlertPublishError} when an alert or resolve message could not be published (the caller answers 5xx)
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
  const price = priceFor(host.instance_type, host.region, deps.priceOverrides, gpuCount || undefined, {
    lifecycle: host.lifecycle ?? 'on-demand',
    ...(deps.priceRates !== undefined ? { rates: deps.priceRates } : {}),
  });

  // Most severe first (the order alerts go out); every finding has its own alert id and cooldown.
  const findings = [...evaluatePointRules(enriched, deps.rules, now)].sort(
    (a, b) => SEVERITY_ORDER[a.severity] - SEVERITY_ORDER[b.severity],
  );
  // One read of the instance's state (broken and idle marks, firing alerts) for the whole batch.
  const state = await deps.state.getInstanceState(host.instance_id);
  const window = judgeWindows(enriched, deps, price, state, now);
  // Broken-since for this batch's ledger in memory; the marks are persisted only after the store write.
  const marks = brokenMarksOf(findings);
  const broken = withBrokenMarks(state.broken, marks);

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
      namespace: w.k8s?.namespace,
      pod: w.k8s?.pod,
      container: w.k8s?.container,
      batch_id: batch.batch_id,
      seq: batch.seq,
      metrics: w.metrics,
      ledger: computeLedger(w, price, {
        brokenSince: brokenSinceFor(broken, w),
        diagnosis: window.diagnoses.get(w.gpu.index),
      }),
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

  for (const [key, at] of window.idle.mark) await deps.state.markIdle(host.instance_id, key, at);
  for (const key of window.idle.clear) await deps.state.clearIdle(host.instance_id, key);

  const sent: Alert[] = [];
  const failed: Alert[] = [];
  const decisions: RemediationDecision[] = [];
  const send = async (alert: Alert): Promise<boolean> => {
    const outcome = await publishOnce(alert, deps, now);
    if (outcome === 'sent') sent.push(alert);
    if (outcome === 'failed') failed.push(alert);
    return outcome === 'sent';
  };
  for (const finding of findings) {
    await send(toAlert(finding, host));
    if (finding.action === 'replace' || finding.action === 'reset') {
      decisions.push(await remediate(finding, batch, instance, deps, now));
    }
  }
  // Window findings: never a remediation (efficiency is the owner's to fix), and they resolve.
  for (const finding of window.findings) {
    const alert = toAlert(finding, host);
    if ((await send(alert)) && RESOLVING_WINDOW_RULES.has(finding.rule)) {
      await deps.state.putFiringAlert({
        instance_id: host.instance_id,
        alert_id: alert.id,
        rule: finding.rule,
        severity: finding.severity,
        instance_type: host.instance_type,
        since: finding.at,
        summary: finding.summary,
      });
    }
  }
  await resolveStopped(window, state.firing, deps, batch, now, sent, failed);
  if (failed.length > 0) {
    throw new AlertPublishError(
      failed.map((a) => a.id),
      `Expected every alert to publish, ${failed.length} failed (${failed.map((a) => a.id).join(', ')}); the batch is stored, answer 5xx so the agent retries and the alert goes out`,
    );
  }
  deps.log.info('batch accepted', {
    instance_id: host.instance_id,
    seq: batch.seq,
    windows: rows.gpu.length,
    events: rows.events.length,
    findings: findings.length + window.findings.length,
    alerts: sent.length,
  });
  return {
    accepted: written.written,
    rejected: written.rejected.length,
    findings: [...findings, ...window.findings],
    diagnoses: window.diagnoses,
    alerts: sent,
    decisions,
    windows: rows.gpu,
  };
}

/** What the window rules made of one batch. */
interface WindowJudgement {
  readonly findings: readonly Finding[];
  readonly judged: ReadonlySet<string>;
  /** GPU index → diagnosis of its judged horizon, stored with the GPU's flush windows. */
  readonly diagnoses: ReadonlyMap<number, Diagnosis>;
  readonly idle: IdleSinceUpdate;
}

/**
 * Judges the batch's horizon windows (docs/design.md §6): the diagnosis per GPU, the window rules, and the idle
 * marks `idle_billed` needs (the instance's stored idle marks, used only when there is a horizon to judge).
 */
function judgeWindows(
  batch: Batch,
  deps: PipelineDeps,
  price: InstancePrice,
  state: InstanceState,
  now: Date,
): WindowJudgement {
  const { gpus, shortGpus } = judgedHorizons(batch, deps.rules.thresholds, price);
  const previous = gpus.length > 0 ? state.idle : new Map<string, string>();
  const idle = nextIdleSince(previous, gpus, deps.rules.thresholds);
  const { findings, judged } = evaluateWindowRules(
    { batch, gpus, shortGpus, price, idleSince: idle.since },
    deps.rules,
    now,
  );
  return {
    findings,
    judged,
    diagnoses: new Map(gpus.map((g) => [g.window.gpu.index, g.diagnosis])),
    idle,
  };
}

/**
 * Publish-then-record (issue 9): lease the alert, publish, then record the send; a failed publish frees
 * the lease, so the agent's retry sends it instead of the cooldown swallowing it. Shared by ingest and
 * the fleet evaluator (one alert lifecycle).
 *
 * @param alert - the alert to send
 * @param deps - state store, alert sink, log, cooldown
 * @param now - the server's clock
 * @returns `sent`, `skipped` (in cooldown, or another invocation is sending it), or `failed`
 */
export async function publishOnce(
  alert: Alert,
  deps: Pick<PipelineDeps, 'state' | 'alerts' | 'log' | 'alertCooldownS'>,
  now: Date,
): Promise<'sent' | 'skipped' | 'failed'> {
  const at = now.toISOString();
  const cooldownS = deps.alertCooldownS ?? DEFAULT_ALERT_COOLDOWN_S;
  if (!(await deps.state.leaseAlert(alert.id, at, cooldownS, ALERT_LEASE_S))) return 'skipped';
  try {
    await deps.alerts.publish(alert);
  } catch (err) {
    await deps.state.releaseAlertLease(alert.id, at);
    deps.log.error('alert publish failed; the lease is freed so a retry sends it', {
      alert_id: alert.id,
      error: (err as Error).message,
    });
    return 'failed';
  }
  await deps.state.confirmAlert(alert.id, at, cooldownS);
  return 'sent';
}

/**
 * Resolves the firing window alerts whose rule judged this batch and found nothing: the one invocation
 * that removes the firing record sends the resolve message and re-arms the alert (a return of the
 * condition is a new transition to firing, sent after {@link ALERT_REARM_S}); if that publish fails the
 * record goes back.
 */
async function resolveStopped(
  window: WindowJudgement,
  firingBefore: readonly FiringAlert[],
  deps: PipelineDeps,
  batch: Batch,
  now: Date,
  sent: Alert[],
  failed: Alert[],
): Promise<void> {
  if (window.judged.size === 0) return;
  const { host } = batch;
  const firingNow = new Set(window.findings.map((f) => alertId(f)));
  // Read with the batch's state: an alert this batch put firing is in `firingNow`, so skipped either way.
  for (const firing of firingBefore) {
    if (firingNow.has(firing.alert_id) || !window.judged.has(firing.rule)) continue;
    if (!(await deps.state.takeFiringAlert(host.instance_id, firing.alert_id))) continue;
    const alert = toAlert(resolvedFinding(firing, now), host, 'resolved');
    if (await publishResolve(firing, alert, deps, now)) sent.push(alert);
    else failed.push(alert);
  }
}

/**
 * Sends the resolve message of a firing alert whose record this invocation took (`takeFiringAlert`),
 * then re-arms it: a return of the condition is a new episode, sent once {@link ALERT_REARM_S} have
 * passed since the resolve (not the previous episode's full cooldown), recorded as a send at
 * now + rearm − cooldown. If the publish fails the firing record goes back. Shared by ingest and the
 * fleet evaluator.
 *
 * @param firing - the record taken
 * @param alert - its resolve message
 * @param deps - state store, alert sink, log, cooldown
 * @param now - the server's clock
 * @returns true when sent, false when the publish failed (logged; the alert stays firing)
 */
export async function publishResolve(
  firing: FiringAlert,
  alert: Alert,
  deps: Pick<PipelineDeps, 'state' | 'alerts' | 'log' | 'alertCooldownS'>,
  now: Date,
): Promise<boolean> {
  try {
    await deps.alerts.publish(alert);
  } catch (err) {
    await deps.state.putFiringAlert(firing);
    deps.log.error('resolve publish failed; the alert stays firing', {
      alert_id: firing.alert_id,
      error: (err as Error).message,
    });
    return false;
  }
  const cooldownS = deps.alertCooldownS ?? DEFAULT_ALERT_COOLDOWN_S;
  const rearmAt = new Date(now.getTime() + (Math.min(ALERT_REARM_S, cooldownS) - cooldownS) * 1000);
  await deps.state.confirmAlert(firing.alert_id, rearmAt.toISOString(), cooldownS);
  return true;
}

/** The finding of a resolve message: same rule, instance and severity (same topic), nothing to do. */
function resolvedFinding(firing: FiringAlert, now: Date): Finding {
  return {
    rule: firing.rule,
    severity: firing.severity,
    action: 'none',
    instance_id: firing.instance_id,
    instance_type: firing.instance_type,
    at: now.toISOString(),
    summary: firing.summary,
    remedy: 'Nothing: the condition no longer holds over the last horizon.',
    evidence: { firing_since: firing.since, resolved_at: now.toISOString() },
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
