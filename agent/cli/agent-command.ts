import { pino } from 'pino';
import type { Host } from '../../lambdas/contract';
import { AgentLoop } from '../agent-loop';
import { type AgentLog, resolveAgentIdentity, startAgentRuntime } from '../agent-runtime';
import type { AgentConfig } from '../config';
import { BatchBuilder } from '../send/batcher';
import { MemorySink } from '../send/memory-sink';
import { NvmlSource } from '../sources/nvml';
import { AGENT_VERSION } from '../version';
import { HorizonTracker } from '../window/horizon';

/** Modes of `gpu-sentinel agent` beyond the configuration. */
export interface AgentRunMode {
  /** Take one short window (two samples 1 s apart), print it, send nothing, touch no spool. */
  readonly once: boolean;
  /** Print the batch as JSON (with `once`). */
  readonly print: boolean;
}

/** The identity used for a diagnosis run where IMDS does not answer (not an EC2 instance). */
export const DIAGNOSIS_HOST: Host = {
  instance_id: 'i-00000000000000000',
  instance_type: 'local.gpu',
  region: 'us-east-1',
};

/**
 * `gpu-sentinel agent`: the host agent from a resolved configuration (see `agent/config`): reads
 * NVML every poll interval, flushes windows, and delivers them through the on-disk spool
 * (SigV4, gzip). SIGTERM/SIGINT: a final flush, the unsent batches stay spooled, then exit.
 * `--once --print`: one short window printed as JSON for diagnosis; nothing sent or spooled.
 *
 * @returns the exit code: 0, or 1 when batches are still waiting in the spool at exit
 * @throws {NvmlUnavailableError} when the NVML library cannot be loaded (systemd restarts the unit)
 * @throws {Error} naming `endpoint` when it is missing for a sending run
 */
export async function runAgentCommand(
  config: AgentConfig,
  mode: AgentRunMode,
  write: (s: string) => void,
): Promise<number> {
  const log: AgentLog = pino(
    { level: config.logLevel, base: { service: 'gpu-sentinel-agent' } },
    pino.destination(2),
  );
  if (mode.once) return runOnce(config, mode, log, write);
  if (!config.endpoint)
    throw new Error(
      'Expected `endpoint` (the API stage URL; flag --endpoint, env GPU_SENTINEL_ENDPOINT), got nothing',
    );
  const runtime = await startAgentRuntime({ config, version: AGENT_VERSION, log });
  const controller = new AbortController();
  const stop = (): void => controller.abort();
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  await runtime.run(controller.signal);
  return runtime.loop.pendingCount === 0 ? 0 : 1;
}

async function runOnce(
  config: AgentConfig,
  mode: AgentRunMode,
  log: AgentLog,
  write: (s: string) => void,
): Promise<number> {
  const nvml = NvmlSource.open({ libraryPath: config.nvmlLibraryPath, logger: log });
  try {
    const host = await resolveAgentIdentity({ config, log, fallbackHost: DIAGNOSIS_HOST });
    const sink = new MemorySink();
    const loop = new AgentLoop({
      source: nvml,
      host,
      agent: { version: AGENT_VERSION, ...nvml.versions(), profiling_source: nvml.profilingSource() },
      builder: new BatchBuilder(),
      delivery: sink,
      // The one batch printed is the one that would go out: with its horizons.
      sendIntervalS: 0,
      horizon: new HorizonTracker({ horizonS: config.horizonS, sampleIntervalMs: config.pollIntervalMs }),
    });
    loop.poll();
    await new Promise((r) => setTimeout(r, Math.max(config.pollIntervalMs, 200)));
    loop.poll();
    await loop.flush();
    const printed = sink.submitted;
    if (mode.print) write(`${JSON.stringify(printed.length === 1 ? printed[0] : printed, null, 2)}\n`);
    return 0;
  } finally {
    nvml.close();
  }
}
