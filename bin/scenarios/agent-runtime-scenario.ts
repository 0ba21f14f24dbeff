import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AgentLog, startAgentRuntime } from '../../agent/agent-runtime';
import { AgentConfigSchema } from '../../agent/config';
import { driveLoop, VirtualClock } from '../../agent/playback/playback';
import type { ScenarioLabels } from './catalog';
import type { Scenario } from './scenario';

/**
 * A scenario played by the real agent runtime (NVML through koffi, GPM or DCGM, XID events, EFA
 * sysfs counters, horizons, the on-disk spool, the HTTP sender) on a virtual clock: twenty minutes
 * of 1 s polls take seconds, and the batches reach the pipeline over loopback HTTP as a live
 * agent's do.
 */

/** Options of {@link agentRuntimeScenario}. */
export interface AgentRuntimeScenarioOptions {
  /** Scenario name, kebab-case. */
  readonly name: string;
  /** What the host shows. */
  readonly label: string;
  /** What it must raise. */
  readonly labels: ScenarioLabels;
  /** The NVML library the agent loads (a real one, or a fake for tests). */
  readonly nvmlLibraryPath: string;
  /** EC2 instance id of the host (the agent's `instanceId` override; IMDS is off). */
  readonly instanceId: string;
  /** EC2 instance type of the host, priced from the built-in table. */
  readonly instanceType: string;
  /** AWS region of the host. @default 'us-east-1' */
  readonly region?: string;
  /** EFA sysfs root (`/sys/class/infiniband` or a generated tree). @default 'off' */
  readonly efaRoot?: string;
  /** Flush window, s (the agent's `flushIntervalS`). @default 300 */
  readonly flushIntervalS?: number;
  /** Called before the agent starts (e.g. to configure a fake library). @default none */
  readonly beforeStart?: () => void;
  /** Called at each virtual instant before the poll (e.g. to move sysfs counters). @default none */
  readonly onTick?: (now: Date) => void;
  /** The agent's log. @default silent */
  readonly log?: AgentLog;
}

/** Longest wait for the spool to drain at the end of a scenario, ms. */
const DRAIN_TIMEOUT_MS = 30_000;

const SILENT_AGENT_LOG: AgentLog = { info() {}, warn() {}, error() {} };

/**
 * A scenario whose batches come from `startAgentRuntime` itself, driven over the scenario's span
 * on a virtual clock (poll every 1 s, flush every `flushIntervalS`, a 15-minute horizon), its
 * spool in a temp folder removed at the end, its sender pointed at the scenario's pipeline.
 *
 * @param options - identity, NVML library, EFA root, hooks, labels
 * @returns the scenario
 */
export function agentRuntimeScenario(options: AgentRuntimeScenarioOptions): Scenario {
  return {
    name: options.name,
    label: options.label,
    instance_id: options.instanceId,
    ...options.labels,
    async play(ctx) {
      options.beforeStart?.();
      const spoolDir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-scenario-spool-'));
      const clock = new VirtualClock(ctx.from.getTime());
      const flushIntervalS = options.flushIntervalS ?? 300;
      try {
        const runtime = await startAgentRuntime({
          config: AgentConfigSchema.parse({
            endpoint: ctx.url,
            auth: 'none',
            imds: 'off',
            instanceId: options.instanceId,
            instanceType: options.instanceType,
            region: options.region ?? 'us-east-1',
            nvmlLibraryPath: options.nvmlLibraryPath,
            kmsgPath: 'off',
            efaRoot: options.efaRoot ?? 'off',
            dcgmExporterUrl: 'off',
            flushIntervalS,
            pollIntervalMs: 1000,
            horizonS: 900,
            spoolDir,
            logLevel: 'warn',
          }),
          version: ctx.agentVersion,
          log: options.log ?? SILENT_AGENT_LOG,
          clock: clock.now,
        });
        try {
          await driveLoop(runtime.loop, clock, {
            fromMs: ctx.from.getTime(),
            toMs: ctx.to.getTime(),
            pollIntervalMs: 1000,
            flushIntervalS,
            ...(options.onTick ? { onTick: options.onTick } : {}),
          });
          const deadline = performance.now() + DRAIN_TIMEOUT_MS;
          while (runtime.loop.pendingCount > 0 && performance.now() < deadline) {
            await runtime.loop.settle(DRAIN_TIMEOUT_MS);
            if (runtime.loop.pendingCount > 0) await runtime.loop.flush();
          }
          const left = runtime.loop.pendingCount;
          if (left > 0) ctx.undelivered(left);
        } finally {
          await runtime.close();
        }
      } finally {
        await rm(spoolDir, { recursive: true, force: true });
      }
    },
  };
}
