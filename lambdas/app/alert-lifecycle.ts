import type { Host } from '../contract';
import {
  ALERT_LEASE_S,
  ALERT_REARM_S,
  type Alert,
  type AlertBounds,
  alertId,
  DEFAULT_ALERT_BOUNDS,
  DEFAULT_ALERT_COOLDOWN_S,
  type Finding,
  type FiringAlert,
  instanceAlertScope,
  MS_PER_SECOND,
  type RuleId,
  windowResolvedAlert,
} from '../domain';
import type { AlertLifecycleDeps } from './pipeline';

/**
 * The alert lifecycle (docs/design.md §6), shared by ingest and the fleet evaluator: an alert is
 * sent on the transition to firing, again after its cooldown while it still fires, and once more
 * when a rule that judged finds the condition gone; two invocations never send the same message.
 */

/** What happened to the alerts of one run: published, and failed to publish (sent by the next try). */
export interface AlertTally {
  /** Alerts published, in the order they went out. */
  readonly sent: Alert[];
  /** Alerts whose publish failed (their leases freed, their firing records kept). */
  readonly failed: Alert[];
}

/**
 * Publish-then-record: lease the alert, publish, then record the send; a failed publish frees the
 * lease, so the agent's retry (or the next run) sends it instead of the cooldown swallowing it.
 *
 * @param alert - the alert to send
 * @param deps - state store, alert sink, log, cooldown (@default DEFAULT_ALERT_COOLDOWN_S)
 * @param now - the server's clock
 * @param admit - asked once the lease is held (so only an alert that would really go out is
 *   counted): false gives the lease back and sends nothing (`folded`) @default always admitted
 * @returns `sent`, `skipped` (in cooldown, or another invocation is sending it), `folded` (not
 *   admitted), or `failed` (logged)
 * @throws whatever the state store throws when it cannot be reached (`StoreUnavailableError`)
 */
export async function publishOnce(
  alert: Alert,
  deps: AlertLifecycleDeps,
  now: Date,
  admit?: () => Promise<boolean>,
): Promise<'sent' | 'skipped' | 'folded' | 'failed'> {
  const at = now.toISOString();
  const cooldownS = deps.alertCooldownS ?? DEFAULT_ALERT_COOLDOWN_S;
  if (!(await deps.state.leaseAlert(alert.id, at, cooldownS, ALERT_LEASE_S))) return 'skipped';
  if (admit !== undefined && !(await admit())) {
    await deps.state.releaseAlertLease(alert.id, at);
    return 'folded';
  }
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
 * Sends the resolve message of a firing alert whose record this invocation took (`takeFiringAlert`),
 * then re-arms it: a return of the condition is a new episode, sent once {@link ALERT_REARM_S} have
 * passed since the resolve (not the previous episode's full cooldown), recorded as a send at
 * now + rearm − cooldown. If the publish fails the firing record goes back.
 *
 * @param firing - the record taken
 * @param alert - its resolve message
 * @param deps - state store, alert sink, log, cooldown
 * @param now - the server's clock
 * @returns true when sent, false when the publish failed (logged; the alert stays firing)
 * @throws whatever the state store throws when it cannot be reached
 */
export async function publishResolve(
  firing: FiringAlert,
  alert: Alert,
  deps: AlertLifecycleDeps,
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
  const rearmAt = new Date(now.getTime() + (Math.min(ALERT_REARM_S, cooldownS) - cooldownS) * MS_PER_SECOND);
  await deps.state.confirmAlert(firing.alert_id, rearmAt.toISOString(), cooldownS);
  return true;
}

/** What the window rules said about one batch, as the resolve step needs it. */
export interface WindowVerdicts {
  /** The window findings of the batch (their alerts stay firing). */
  readonly findings: readonly Finding[];
  /** The window rules that could judge the batch. */
  readonly judged: ReadonlySet<RuleId>;
}

/**
 * Resolves the firing window alerts of an instance whose rule judged this batch and found nothing:
 * the one invocation that removes the firing record sends the resolve message and re-arms the
 * alert ({@link publishResolve}); if that publish fails the record goes back.
 *
 * @param verdicts - the batch's window findings and judging rules
 * @param firingBefore - the instance's firing records, read with the batch's state (an alert this
 *   batch put firing has a finding now, so it is skipped either way)
 * @param host - the instance (its id scopes the records; the message names it)
 * @param deps - state store, alert sink, log, cooldown
 * @param now - the server's clock
 * @param tally - where each resolve message is counted, sent or failed
 * @throws whatever the state store throws when it cannot be reached
 */
export async function resolveStopped(
  verdicts: WindowVerdicts,
  firingBefore: readonly FiringAlert[],
  host: Host,
  deps: AlertLifecycleDeps,
  now: Date,
  tally: AlertTally,
): Promise<void> {
  if (verdicts.judged.size === 0) return;
  const firingNow = new Set(verdicts.findings.map((f) => alertId(f)));
  for (const firing of firingBefore) {
    if (firingNow.has(firing.alert_id) || !verdicts.judged.has(firing.rule)) continue;
    if (!(await deps.state.takeFiringAlert(host.instance_id, firing.alert_id))) continue;
    const alert = windowResolvedAlert(firing, host, now);
    if (await publishResolve(firing, alert, deps, now)) tally.sent.push(alert);
    else tally.failed.push(alert);
  }
}

/**
 * The per-instance bound of bounded fan-out (docs/remediation.md): records the alert id in the
 * instance's alert scope (`StateStore.recordFault`, `alerts#<instance>`) and admits it while the
 * instance has sent at most `perInstance` distinct alerts within `windowS`. Asked by
 * {@link publishOnce} only once the alert's lease is held, so an alert in its cooldown costs nothing.
 *
 * @param instanceId - the batch's instance
 * @param id - the alert id
 * @param deps - state store and bounds (@default DEFAULT_ALERT_BOUNDS)
 * @param now - the server's clock
 * @returns the admission check
 */
export function withinInstanceBound(
  instanceId: string,
  id: string,
  deps: Pick<AlertLifecycleDeps, 'state'> & { readonly alertBounds?: AlertBounds },
  now: Date,
): () => Promise<boolean> {
  const bounds = deps.alertBounds ?? DEFAULT_ALERT_BOUNDS;
  return async () => {
    const recent = await deps.state.recordFault(
      instanceAlertScope(instanceId),
      id,
      now.toISOString(),
      bounds.windowS,
    );
    return recent.length <= bounds.perInstance;
  };
}
