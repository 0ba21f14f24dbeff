import { join, resolve } from 'node:path';
import { type AgentLog, startAgentRuntime } from '../../agent/agent-runtime';
import { AgentConfigSchema } from '../../agent/config';
import { HttpSender } from '../../agent/send/sender';
import { NvmlSource } from '../../agent/sources/nvml';
import { resolveNvmlLibraryPath } from '../../agent/sources/nvml/library-path';
import { buildReplayBatches, loadReplayManifest } from '../../agent/sources/replay';
import type { Batch, Host } from '../../lambdas/contract';
import { parsePriceOverrides, parseRemediationMode } from '../../lambdas/domain';
import type { Log } from '../../lambdas/handlers/log';
import { startLocalPipeline } from '../../lambdas/local/local-pipeline';
import { wasteSummary } from '../../lambdas/local/waste-report';
import { DIAGNOSIS_HOST } from './agent';
import { AGENT_VERSION, BUNDLED_REPLAY_MANIFEST } from './paths';

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
  readonly priceOverrides?: string;
  /** With a real GPU: the EC2 instance type to price the run at (there is no IMDS locally). @default 'local.gpu' (unpriced) */
  readonly instanceType?: string;
}

/** A live local run on a machine that is not (or cannot ask) EC2 uses the diagnosis identity. */
const LOCAL_HOST: Host = DIAGNOSIS_HOST;
const LOCAL_IDENTITY = {
  instanceId: LOCAL_HOST.instance_id,
  instanceType: LOCAL_HOST.instance_type,
  region: LOCAL_HOST.region,
};

/**
 * `gpu-sentinel local`: starts the embedded pipeline, feeds it from the real NVML when the library
 * loads (live agent for `durationS`) or else from a replay of recorded captures, then prints the
 * alerts and the waste report and writes `alerts.jsonl`, `remediation.jsonl`, `waste.csv`.
 *
 * @returns the process exit code: 0 when every batch was accepted, 1 otherwise
 */
export async function runLocalCommand(
  opts: LocalCommandOptions,
  log: Log,
  write: (s: string) => void,
): Promise<number> {
  const outDir = resolve(opts.out);
  const pipeline = await startLocalPipeline({
    outDir,
    dbPath: opts.db ? resolve(opts.db) : undefined,
    remediationMode: parseRemediationMode(opts.remediationMode),
    priceOverrides: parsePriceOverrides(opts.priceOverrides),
    log,
    write,
  });
  const sender = new HttpSender({ endpoint: pipeline.url, auth: 'none' });
  let failures = 0;
  let from: Date;
  try {
    const nvmlLibraryPath = resolveNvmlLibraryPath(opts.nvmlLib);
    const nvml = opts.nvml && !opts.replay ? nvmlAvailable(nvmlLibraryPath, log) : false;
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
      });
      write(
        `NVML found at ${nvmlLibraryPath}: running the agent for ${opts.durationS} s (flush every ${flushIntervalS} s)\n`,
      );
      from = new Date();
      const controller = new AbortController();
      const timer = setTimeout(() => controller.abort(), opts.durationS * 1000);
      await runtime.run(controller.signal);
      clearTimeout(timer);
      failures = runtime.loop.pendingCount;
    } else {
      const manifestPath = resolve(opts.replay ?? BUNDLED_REPLAY_MANIFEST);
      const manifest = await loadReplayManifest(manifestPath);
      const now = new Date();
      const batches: Batch[] = await buildReplayBatches(manifest, { now, agentVersion: AGENT_VERSION });
      from = new Date(now.getTime() - manifest.duration_s * 1000 - 1000);
      write(
        `No NVML in use: replaying ${manifest.hosts.length} hosts from ${manifestPath} (${batches.length} batches)\n`,
      );
      for (const batch of batches) {
        try {
          await sender.send(batch);
        } catch (err) {
          failures += 1;
          log.error('batch not accepted', {
            seq: batch.seq,
            instance_id: batch.host.instance_id,
            error: (err as Error).message,
          });
        }
      }
    }
    const rows = await pipeline.writeWasteReport(from, new Date(Date.now() + 1000));
    write(`\nAlerts: ${pipeline.alerts.published.length}\n`);
    write(`Remediation decisions:\n`);
    for (const d of pipeline.decisions.recorded) {
      write(
        `  ${d.action.toUpperCase()} ${d.instance_id}${d.gpu_index === undefined ? '' : ` GPU ${d.gpu_index}`} (${d.rule}): ${d.reason}\n`,
      );
    }
    if (pipeline.decisions.recorded.length === 0) write('  none\n');
    write(`\n${wasteSummary(rows)}\n`);
    write(`\nWrote ${outDir}/alerts.jsonl, remediation.jsonl, waste.csv\n`);
  } finally {
    await pipeline.close();
  }
  return failures === 0 ? 0 : 1;
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
