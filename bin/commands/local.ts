import { resolve } from 'node:path';
import { AgentLoop } from '../../agent/agent-loop';
import { BatchBuilder } from '../../agent/send/batcher';
import { HttpSender } from '../../agent/send/sender';
import { NvmlSource } from '../../agent/sources/nvml';
import { resolveNvmlLibraryPath } from '../../agent/sources/nvml/library-path';
import { buildReplayBatches, loadReplayManifest } from '../../agent/sources/replay';
import type { Batch, Host } from '../../lambdas/contract';
import { parsePriceOverrides, parseRemediationMode } from '../../lambdas/domain';
import type { Log } from '../../lambdas/handlers/log';
import { startLocalPipeline } from '../../lambdas/local/local-pipeline';
import { wasteSummary } from '../../lambdas/local/waste-report';
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
}

/** The host identity used for a live local run on a machine that is not (or cannot ask) EC2. */
const LOCAL_HOST: Host = {
  instance_id: 'i-00000000000000000',
  instance_type: 'local.gpu',
  region: 'us-east-1',
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
  const to = new Date(Date.now() + 1000);
  try {
    const nvml = opts.nvml && !opts.replay ? tryOpenNvml(opts.nvmlLib, log) : undefined;
    if (nvml) {
      write(
        `NVML found (driver ${nvml.versions().driver_version ?? '?'}): running the agent for ${opts.durationS} s\n`,
      );
      from = new Date();
      const controller = new AbortController();
      const loop = new AgentLoop({
        source: nvml,
        host: LOCAL_HOST,
        agent: { version: AGENT_VERSION, profiling_source: 'none', ...nvml.versions() },
        builder: new BatchBuilder(),
        send: (batch) => sender.send(batch),
        onWarning: (message, data) => log.warn(message, data),
      });
      const timer = setTimeout(() => controller.abort(), opts.durationS * 1000);
      await loop.run(controller.signal);
      clearTimeout(timer);
      failures = loop.pendingCount;
      nvml.close();
    } else {
      const manifestPath = resolve(opts.replay ?? BUNDLED_REPLAY_MANIFEST);
      const manifest = await loadReplayManifest(manifestPath);
      const now = new Date();
      const batches: Batch[] = buildReplayBatches(manifest, { now, agentVersion: AGENT_VERSION });
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
    const rows = await pipeline.writeWasteReport(from, to);
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

function tryOpenNvml(flag: string | undefined, log: Log): NvmlSource | undefined {
  try {
    return NvmlSource.open({ libraryPath: resolveNvmlLibraryPath(flag) });
  } catch (err) {
    log.info('NVML not available; using the replay', { error: (err as Error).message });
    return undefined;
  }
}
