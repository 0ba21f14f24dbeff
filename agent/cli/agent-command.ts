import { pino } from 'pino';
import type { Host } from '../../lambdas/contract';
import { type AgentLog, resolveAgentIdentity, startAgentRuntime } from '../agent-runtime';
import { systemClock } from '../clock';
import { composeAgent } from '../compose-agent';
import type { AgentConfig } from '../config';
import { NvmlGpuSource } from '../sources/nvml/nvml-gpu-source';
import { AGENT_VERSION } from '../version';

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

/**
 * `--once`: the agent composed as a host composes it, on NVML alone with memory delivery: two
 * polls at least 200 ms apart, one flush, the batch printed (with its horizons, as a batch that
 * goes out carries them); nothing sent, no spool touched.
 */
async function runOnce(
  config: AgentConfig,
  mode: AgentRunMode,
  log: AgentLog,
  write: (s: string) => void,
): Promise<number> {
  const nvml = new NvmlGpuSource({ libraryPath: config.nvmlLibraryPath, logger: log });
  const agent = await composeAgent({
    sources: [nvml],
    host: () => resolveAgentIdentity({ config, log, fallbackHost: DIAGNOSIS_HOST }),
    agent: () => ({
      version: AGENT_VERSION,
      ...nvml.source.versions(),
      profiling_source: nvml.source.profilingSource(),
    }),
    clock: systemClock,
    // The one batch printed is the one that would go out: with its horizons.
    cadence: { pollIntervalMs: config.pollIntervalMs, sendIntervalS: 0, horizonS: config.horizonS },
    delivery: { kind: 'memory' },
    warn: (message, data) => log.warn(data ?? {}, message),
  });
  try {
    agent.loop.poll();
    await new Promise((r) => setTimeout(r, Math.max(config.pollIntervalMs, 200)));
    agent.loop.poll();
    await agent.loop.flush();
    const printed = agent.batches;
    if (mode.print) write(`${JSON.stringify(printed.length === 1 ? printed[0] : printed, null, 2)}\n`);
    return 0;
  } finally {
    await agent.close();
  }
}
