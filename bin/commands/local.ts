import { join, resolve } from 'node:path';
import { type AgentLog, startAgentRuntime } from '../../agent/agent-runtime';
import { DIAGNOSIS_HOST } from '../../agent/cli/agent-command';
import { AgentConfigSchema } from '../../agent/config';
import { buildReplayBatches, loadReplayManifest } from '../../agent/playback/replay';
import { IDLE_BILLED_SHOWN_AFTER_S } from '../../agent/playback/simulate-fleet';
import { HttpSender } from '../../agent/send/sender';
import { NvmlSource } from '../../agent/sources/nvml';
import { resolveNvmlLibraryPath } from '../../agent/sources/nvml/library-path';
import { AGENT_VERSION } from '../../agent/version';
import { type Clock, systemClock } from '../../lambdas/adapters/clock';
import type { Batch, Host } from '../../lambdas/contract';
import { parsePriceOverrides, parseRemediationDelayS, parseRemediationMode } from '../../lambdas/domain';
import type { Log } from '../../lambdas/handlers/log';
import { type LocalPipeline, startLocalPipeline } from '../../lambdas/local/local-pipeline';
import { wasteSummary } from '../../lambdas/local/waste-summary';
import { simulatedFleetScenarios } from '../scenarios/catalog';
import {
  DEFAULT_SCENARIO_DURATION_S,
  observeHosts,
  playScenarios,
  sendAll,
} from '../scenarios/run-scenarios';
import type { Scenario } from '../scenarios/scenario';
import { BUNDLED_REPLAY_MANIFEST } from './paths';
import { loadPriceRates } from './price-rates-file';
import { loadRuleContext } from './rules-file';

/** Options of `gpu-sentinel local`, as commander parses them. */
export interface LocalCommandOptions {
  /** Replay manifest; default: the bundled real captures. */
  readonly replay?: string;
  /** Output folder. @default 'out' */
  readonly out: string;
  /** DuckDB file. @default `<out>/gpu-sentinel.duckdb` (recreated) */
  readonly db?: string;
  /** Live-agent run length when NVML is present, s. @default 60 */
  readonly durationS: number;
  readonly nvmlLib?: string;
  /** False with `--no-nvml`. @default true */
  readonly nvml: boolean;
  readonly remediationMode: string;
  /** Grace period before a (dry-run) reboot or replacement, whole s as given on the command line. @default 0 (act at once) */
  readonly remediationDelayS?: string;
  readonly priceOverrides?: string;
  /** The deployment's rates, a JSON file in the shape of the stack's `priceRates` prop (see `loadPriceRates`). @default list prices */
  readonly priceRates?: string;
  /** With a real GPU: the EC2 instance type to price the run at (there is no IMDS locally). @default 'local.gpu' (unpriced) */
  readonly instanceType?: string;
  /**
   * Feed only one source: `live` (the real NVML; fails without it), `captures` (the replay) or
   * `simulation` (the simulated fleet). @default the live agent when NVML loads, else the captures; plus the simulated fleet
   */
  readonly only?: LocalSource;
  /** Rule-threshold overrides, a JSON file (see `parseRuleThresholds`). @default the defaults */
  readonly rules?: string;
  /** How often the fleet evaluator runs during the run, s > 0; it runs once more at the end. @default 60 */
  readonly fleetIntervalS?: number;
  /**
   * A Cost and Usage Report 2.0 file or export folder (`--cur`): the fleet evaluator prices team
   * waste at each instance's newest billed rate in it. @default none (the prices stored at ingest)
   */
  readonly cur?: string;
  /** The wall clock: what "now" is for the replay, the simulated fleet and the report's span. @default systemClock */
  readonly clock?: Clock;
}

/** Default interval of the fleet evaluator's timer in local mode, s. */
export const DEFAULT_FLEET_INTERVAL_S = 60;

/** What can feed `gpu-sentinel local`. */
export type LocalSource = 'live' | 'captures' | 'simulation';

/** A live local run on a machine that is not (or cannot ask) EC2 uses the diagnosis identity. */
const LOCAL_HOST: Host = DIAGNOSIS_HOST;
const LOCAL_IDENTITY = {
  instanceId: LOCAL_HOST.instance_id,
  instanceType: LOCAL_HOST.instance_type,
  region: LOCAL_HOST.region,
};

/**
 * `gpu-sentinel local`: starts the embedded pipeline, feeds it from the real NVML when the library
 * loads (live agent for `durationS`) or else from a replay of recorded captures, and from the
 * default simulated fleet (one host per diagnosis, tagged `simulated=true`, 20–35 simulated minutes
 * through the agent's own loop), then prints the alerts, the simulated hosts' diagnoses and fixes,
 * and the waste report, and writes `alerts.jsonl`, `remediation.jsonl`, `waste.csv`. The fleet
 * evaluator runs on a timer every `fleetIntervalS` and once at the end, its alerts with the others.
 *
 * @returns the process exit code: 0 when every batch was accepted, 1 otherwise (or when `--only
 *   live` finds no NVML)
 * @throws {RuleThresholdsError} when the `--rules` file is bad
 */
export async function runLocalCommand(
  opts: LocalCommandOptions,
  log: Log,
  write: (s: string) => void,
): Promise<number> {
  const clock = opts.clock ?? systemClock;
  const outDir = resolve(opts.out);
  const rules = await loadRuleContext(opts.rules);
  const priceRates = await loadPriceRates(opts.priceRates);
  const pipeline = await startLocalPipeline({
    rules,
    outDir,
    dbPath: opts.db ? resolve(opts.db) : undefined,
    remediationMode: parseRemediationMode(opts.remediationMode),
    remediationDelayS: parseRemediationDelayS(opts.remediationDelayS, '--remediation-delay-s'),
    priceOverrides: parsePriceOverrides(opts.priceOverrides),
    ...(priceRates !== undefined ? { priceRates } : {}),
    log,
    write,
    fleetIntervalMs: (opts.fleetIntervalS ?? DEFAULT_FLEET_INTERVAL_S) * 1000,
    clock,
    ...(opts.cur !== undefined ? { curPath: resolve(opts.cur) } : {}),
  });
  const sender = new HttpSender({ endpoint: pipeline.url, auth: 'none' });
  let failures = 0;
  const starts: Date[] = [];
  const only = opts.only;
  try {
    const nvmlLibraryPath = resolveNvmlLibraryPath(opts.nvmlLib);
    const wantLive = (only === undefined && !opts.replay) || only === 'live';
    const nvml = wantLive && opts.nvml ? nvmlAvailable(nvmlLibraryPath, log) : false;
    if (only === 'live' && !nvml) {
      write(`--only live: no usable NVML at ${nvmlLibraryPath} (see the log); nothing to run\n`);
      return 1;
    }
    if (nvml) {
      // The real agent (NVML, GPM/DCGM, XIDs, EFA, horizons, spool) against the loopback API.
      const flushIntervalS = Math.max(1, Math.min(10, Math.floor(opts.durationS / 3)));
      const runtime = await startAgentRuntime({
        config: AgentConfigSchema.parse({
          endpoint: pipeline.url,
          auth: 'none',
          imds: 'off',
          ...LOCAL_IDENTITY,
          ...(opts.instanceType ? { instanceType: opts.instanceType } : {}),
          nvmlLibraryPath,
          flushIntervalS,
          pollIntervalMs: Math.min(1000, flushIntervalS * 1000),
          horizonS: Math.max(60, flushIntervalS),
          spoolDir: join(outDir, 'spool'),
          logLevel: 'warn',
        }),
        version: AGENT_VERSION,
        log: agentLog(log),
        fallbackHost: LOCAL_HOST,
        clock,
      });
      write(
        `NVML found at ${nvmlLibraryPath}: running the agent for ${opts.durationS} s (flush every ${flushIntervalS} s)\n`,
      );
      starts.push(clock());
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), opts.durationS * 1000);
      await runtime.run(controller.signal);
      clearTimeout(timer);
      failures = runtime.loop.pendingCount;
    } else if (only === undefined || only === 'captures') {
      const manifestPath = resolve(opts.replay ?? BUNDLED_REPLAY_MANIFEST);
      const manifest = await loadReplayManifest(manifestPath);
      const now = clock();
      const batches: Batch[] = await buildReplayBatches(manifest, { now, agentVersion: AGENT_VERSION });
      starts.push(new Date(now.getTime() - manifest.duration_s * 1000 - 1000));
      write(
        `${only === 'captures' ? 'Captures only' : 'No NVML in use'}: replaying ${manifest.hosts.length} hosts from ${manifestPath} (${batches.length} batches)\n`,
      );
      failures += await sendAll(sender, batches, log);
    }
    const fleet = only === undefined || only === 'simulation' ? simulatedFleetScenarios() : [];
    if (fleet.length > 0) {
      write(
        `Simulating ${fleet.length} hosts (${DEFAULT_SCENARIO_DURATION_S / 60}–${IDLE_BILLED_SHOWN_AFTER_S / 60} min each, one per diagnosis; tagged simulated=true, not real machines)\n`,
      );
      starts.push(new Date(clock().getTime() - IDLE_BILLED_SHOWN_AFTER_S * 1000 - 1000));
      const refused = await playScenarios(pipeline, fleet, { agentVersion: AGENT_VERSION, log, clock });
      for (const n of refused.values()) failures += n;
    }
    const from = new Date(Math.min(...starts.map((d) => d.getTime())));
    const rows = await pipeline.writeWasteReport(from, new Date(clock().getTime() + 1000));
    const fleetRun = await pipeline.evaluateFleet();
    write(
      `\nFleet rules (agent_silent, straggler per job, waste_rate per team): ${fleetRun.findings.length} firing, over ${fleetRun.instances ?? 0} hosts that reported\n`,
    );
    write(`\nAlerts: ${pipeline.alerts.published.length}\n`);
    write(`Remediation decisions:\n`);
    for (const d of pipeline.decisions.recorded) {
      write(
        `  ${d.action.toUpperCase()} ${d.instance_id}${d.gpu_index === undefined ? '' : ` GPU ${d.gpu_index}`} (${d.rule}): ${d.reason}\n`,
      );
    }
    if (pipeline.decisions.recorded.length === 0) write('  none\n');
    if (fleet.length > 0) write(`\n${await simulatedFleetSummary(pipeline, fleet)}`);
    write(`\n${wasteSummary(rows)}\n`);
    write(`\nWrote ${outDir}/alerts.jsonl, remediation.jsonl, waste.csv\n`);
  } finally {
    await pipeline.close();
  }
  return failures === 0 ? 0 : 1;
}

/**
 * What the pipeline made of each simulated host: its job, what it simulates, the diagnosis of its
 * GPUs, and the summary of each alert raised (the alert lines above carry each rule's fix).
 */
async function simulatedFleetSummary(pipeline: LocalPipeline, fleet: readonly Scenario[]): Promise<string> {
  const observed = await observeHosts(
    pipeline,
    fleet.map((s) => s.instance_id),
  );
  const lines = ['Simulated fleet (not real machines; tag simulated=true):'];
  for (const s of fleet) {
    const o = observed.get(s.instance_id);
    const diagnoses = [...new Set(o?.diagnoses.values() ?? [])].map((d) => d ?? 'none').join(', ');
    lines.push(`  sim-${s.name} (${s.instance_id}): ${s.label}`, `      diagnosis: ${diagnoses || 'none'}`);
    const alerts = pipeline.alerts.published.filter(
      (a) => a.finding.instance_id === s.instance_id && (a.status ?? 'firing') === 'firing',
    );
    if (alerts.length === 0) lines.push('      no alert');
    for (const a of alerts) lines.push(`      ${a.finding.rule}: ${a.finding.summary}`);
  }
  return `${lines.join('\n')}\n`;
}

/** True when the NVML library loads and initialises (then closed again: the runtime opens its own). */
function nvmlAvailable(libraryPath: string, log: Log): boolean {
  try {
    NvmlSource.open({ libraryPath }).close();
    return true;
  } catch (err) {
    log.info('NVML not available; using the replay', { error: (err as Error).message });
    return false;
  }
}

/** The agent runtime's pino-shaped log onto the CLI log. */
function agentLog(log: Log): AgentLog {
  return {
    info: (data, message) => log.info(message, data),
    warn: (data, message) => log.warn(message, data),
    error: (data, message) => log.error(message, data),
  };
}
