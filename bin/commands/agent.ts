import { AgentLoop } from '../../agent/agent-loop';
import { resolveIdentity } from '../../agent/identity';
import { BatchBuilder } from '../../agent/send/batcher';
import { HttpSender } from '../../agent/send/sender';
import { NvmlSource } from '../../agent/sources/nvml';
import { resolveNvmlLibraryPath } from '../../agent/sources/nvml/library-path';
import type { Host } from '../../lambdas/contract';
import type { Log } from '../../lambdas/handlers/log';
import { AGENT_VERSION } from './paths';

/** Options of `gpu-sentinel agent`, as commander parses them. */
export interface AgentCommandOptions {
  /** API stage URL (the batches go to `<endpoint>/v1/batches`). Required unless `--once --print`. */
  readonly endpoint?: string;
  /** Region for SigV4. @default the instance's region */
  readonly region?: string;
  /** `sigv4` (API Gateway IAM auth) or `none` (a local loopback API). @default 'sigv4' */
  readonly auth: 'sigv4' | 'none';
  /** Take one window, print the batch as JSON, send nothing. */
  readonly once: boolean;
  readonly print: boolean;
  readonly nvmlLib?: string;
  /** Poll interval, ms. @default 1000 */
  readonly pollIntervalMs: number;
  /** Flush window, s. @default 10 */
  readonly flushIntervalS: number;
  /** Identity overrides for hosts without IMDS. */
  readonly instanceId?: string;
  readonly instanceType?: string;
}

/**
 * `gpu-sentinel agent`: reads the real NVML every poll interval, aggregates flush windows and sends
 * them (SigV4, gzip, retries); `--once --print` prints one batch for diagnosis and sends nothing.
 * SIGTERM/SIGINT stop it after a final flush.
 *
 * @throws {NvmlUnavailableError} when the NVML library cannot be loaded
 * @throws {Error} naming `--endpoint` when it is missing for a sending run
 */
export async function runAgentCommand(
  opts: AgentCommandOptions,
  log: Log,
  write: (s: string) => void,
): Promise<number> {
  const nvml = NvmlSource.open({ libraryPath: resolveNvmlLibraryPath(opts.nvmlLib) });
  try {
    const override: Partial<Host> = {};
    if (opts.instanceId) override.instance_id = opts.instanceId;
    if (opts.instanceType) override.instance_type = opts.instanceType;
    if (opts.region) override.region = opts.region;
    const host = await resolveIdentity({ override });
    const agent = { version: AGENT_VERSION, profiling_source: 'none' as const, ...nvml.versions() };
    const builder = new BatchBuilder();
    if (opts.once) {
      const printed: unknown[] = [];
      const loop = new AgentLoop({
        source: nvml,
        host,
        agent,
        builder,
        send: async (batch) => printed.push(batch),
        flushIntervalS: opts.flushIntervalS,
      });
      loop.poll();
      await new Promise((r) => setTimeout(r, Math.min(opts.pollIntervalMs, 1000)));
      loop.poll();
      await loop.flush();
      if (opts.print) write(`${JSON.stringify(printed.length === 1 ? printed[0] : printed, null, 2)}\n`);
      return 0;
    }
    if (!opts.endpoint) throw new Error('Expected `--endpoint` (the API stage URL), got nothing');
    const sender = new HttpSender({
      endpoint: opts.endpoint,
      auth: opts.auth,
      region: opts.region ?? host.region,
    });
    const loop = new AgentLoop({
      source: nvml,
      host,
      agent,
      builder,
      send: (batch) => sender.send(batch),
      pollIntervalMs: opts.pollIntervalMs,
      flushIntervalS: opts.flushIntervalS,
      onWarning: (message, data) => log.warn(message, data),
    });
    const controller = new AbortController();
    const stop = (): void => controller.abort();
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
    log.info('agent started', { instance_id: host.instance_id, gpus: nvml.identity().length });
    await loop.run(controller.signal);
    return loop.pendingCount === 0 ? 0 : 1;
  } finally {
    nvml.close();
  }
}
