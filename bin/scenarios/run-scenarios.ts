import { HttpSender } from '../../agent/send/sender';
import { systemClock } from '../../lambdas/adapters/clock';
import type { Batch } from '../../lambdas/contract';
import type { Diagnosis, RuleContext, RuleId } from '../../lambdas/domain';
import type { Log } from '../../lambdas/handlers/log';
import { type LocalPipeline, startLocalPipeline } from '../../lambdas/local/local-pipeline';
import { judgeScenario, type ScenarioObservation, type ScenarioVerdict } from './judge';
import type { Scenario, ScenarioContext } from './scenario';

/**
 * Runs labelled scenarios through the real local pipeline (loopback HTTP → the ingest handler →
 * DuckDB, console/JSONL alert sinks, dry-run remediation) and judges each against its labels.
 */

/** Simulated span of a scenario, s: the 15-minute horizon full, plus 5 minutes of judging. */
export const DEFAULT_SCENARIO_DURATION_S = 1200;

/** Options of {@link playScenarios}. */
export interface PlayScenariosOptions {
  /** Simulated span ending now, s, 60..21,600. @default 1200 */
  readonly durationS?: number;
  /** Seed of the random streams (each scenario adds its position). @default 1 */
  readonly seed?: number;
  /** `agent.version` of the batches. */
  readonly agentVersion: string;
  /** The real clock: the span ends at its value when a scenario starts. @default systemClock */
  readonly clock?: () => Date;
  /** Where refused batches are logged. */
  readonly log: Log;
  /** First host number (scenarios count up from it). @default 0 */
  readonly firstHostNumber?: number;
}

/**
 * Plays scenarios into a running pipeline, one after the other.
 *
 * @param pipeline - a running local pipeline
 * @param scenarios - what to play
 * @param options - span, seed, agent version, clock, log
 * @returns per scenario name, how many of its batches the API refused
 * @throws {RangeError} when `durationS` is out of range
 */
export async function playScenarios(
  pipeline: Pick<LocalPipeline, 'url'>,
  scenarios: readonly Scenario[],
  options: PlayScenariosOptions,
): Promise<Map<string, number>> {
  const durationS = options.durationS ?? DEFAULT_SCENARIO_DURATION_S;
  if (!Number.isInteger(durationS) || durationS < 60 || durationS > 21_600)
    throw new RangeError(`Expected \`durationS\` to be an integer in 60..21600, got \`${durationS}\``);
  const clock = options.clock ?? systemClock;
  const sender = new HttpSender({ endpoint: pipeline.url, auth: 'none', retries: 0 });
  const refused = new Map<string, number>();
  let n = 0;
  for (const scenario of scenarios) {
    let failures = 0;
    const to = clock();
    const ctx: ScenarioContext = {
      url: pipeline.url,
      from: new Date(to.getTime() - durationS * 1000),
      to,
      agentVersion: options.agentVersion,
      hostNumber: (options.firstHostNumber ?? 0) + n,
      seed: (options.seed ?? 1) + n,
      async send(batches: readonly Batch[]) {
        const bad = await sendAll(sender, batches, options.log, { scenario: scenario.name });
        failures += bad;
        return bad;
      },
      undelivered(count: number) {
        failures += count;
      },
    };
    await scenario.play(ctx);
    refused.set(scenario.name, failures);
    n++;
  }
  return refused;
}

/**
 * Sends batches one after the other; a batch the API does not accept is logged (with `context`)
 * and counted, and the rest are still sent.
 *
 * @param sender - the HTTP sender of the pipeline
 * @param batches - in order
 * @param log - where refusals go
 * @param context - extra fields of the log line @default none
 * @returns how many were not accepted
 */
export async function sendAll(
  sender: Pick<HttpSender, 'send'>,
  batches: readonly Batch[],
  log: Log,
  context: Record<string, unknown> = {},
): Promise<number> {
  let bad = 0;
  for (const batch of batches) {
    try {
      await sender.send(batch);
    } catch (err) {
      bad += 1;
      log.error('batch not accepted', {
        ...context,
        seq: batch.seq,
        instance_id: batch.host.instance_id,
        error: (err as Error).message,
      });
    }
  }
  return bad;
}

/**
 * What the pipeline did with each of some hosts: the rules of the firing alerts it published, the
 * diagnosis of each GPU's latest stored window, and the rules of its remediation decisions.
 *
 * @param pipeline - the pipeline the hosts were played into
 * @param instanceIds - the hosts
 * @returns an observation per instance id (`refused` 0: the caller knows what it sent)
 */
export async function observeHosts(
  pipeline: Pick<LocalPipeline, 'alerts' | 'decisions' | 'store'>,
  instanceIds: readonly string[],
): Promise<Map<string, ScenarioObservation>> {
  const wanted = new Set(instanceIds);
  const latest = new Map<string, Map<string, { atMs: number; diagnosis: Diagnosis | undefined }>>();
  for (const row of await pipeline.store.readAll('gpu_windows')) {
    const id = row.instance_id as string;
    if (!wanted.has(id)) continue;
    const atMs = new Date(row.time as string | Date).getTime();
    const gpus = latest.get(id) ?? new Map();
    latest.set(id, gpus);
    const slice =
      row.gpu_instance_id === null || row.gpu_instance_id === undefined ? '' : `/gi${row.gpu_instance_id}`;
    const key = `${Number(row.gpu_index)}${slice}`;
    if ((gpus.get(key)?.atMs ?? Number.NEGATIVE_INFINITY) < atMs)
      gpus.set(key, { atMs, diagnosis: (row.diagnosis ?? undefined) as Diagnosis | undefined });
  }
  const out = new Map<string, ScenarioObservation>();
  for (const id of instanceIds) {
    const fired = new Set<RuleId>(
      pipeline.alerts.published
        .filter((a) => a.finding.instance_id === id && (a.status ?? 'firing') === 'firing')
        .map((a) => a.finding.rule),
    );
    const diagnoses = new Map(
      [...(latest.get(id) ?? new Map<string, { diagnosis: Diagnosis | undefined }>())]
        .sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }))
        .map(([gpu, { diagnosis }]) => [gpu, diagnosis] as const),
    );
    const decided = pipeline.decisions.recorded.filter((d) => d.instance_id === id).map((d) => d.rule);
    out.set(id, { fired, diagnoses, decided, refused: 0 });
  }
  return out;
}

/** Options of {@link runScenarios}. */
export interface RunScenariosOptions extends PlayScenariosOptions {
  /** Folder for the pipeline's `alerts.jsonl`, `remediation.jsonl` and DuckDB file. */
  readonly outDir: string;
  /** Rule thresholds and XID policy. @default the defaults */
  readonly rules?: RuleContext;
  /** Console writer for the alert lines. @default none (quiet) */
  readonly write?: (line: string) => void;
}

/**
 * Starts a local pipeline in `outDir`, plays every scenario into it, and judges each.
 *
 * @param scenarios - the suite; names and instance ids must be unique
 * @param options - output folder, rules, span, seed, agent version, log
 * @returns one verdict per scenario, in order
 * @throws {RangeError} when two scenarios share a name or an instance id
 */
export async function runScenarios(
  scenarios: readonly Scenario[],
  options: RunScenariosOptions,
): Promise<ScenarioVerdict[]> {
  for (const key of ['name', 'instance_id'] as const) {
    const seen = new Set<string>();
    for (const s of scenarios) {
      if (seen.has(s[key])) throw new RangeError(`Expected unique scenario ${key}s, got \`${s[key]}\` twice`);
      seen.add(s[key]);
    }
  }
  const pipeline = await startLocalPipeline({
    outDir: options.outDir,
    log: options.log,
    write: options.write ?? (() => {}),
    ...(options.rules ? { rules: options.rules } : {}),
  });
  try {
    const refused = await playScenarios(pipeline, scenarios, options);
    const observed = await observeHosts(
      pipeline,
      scenarios.map((s) => s.instance_id),
    );
    return scenarios.map((s) =>
      judgeScenario(s, {
        ...(observed.get(s.instance_id) as ScenarioObservation),
        refused: refused.get(s.name) ?? 0,
      }),
    );
  } finally {
    await pipeline.close();
  }
}
