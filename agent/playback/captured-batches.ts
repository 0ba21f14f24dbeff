import { type AgentInfo, ContractValidationError, type GpuWindow, parseBatch } from '../../lambdas/contract';
import { CapturedBatchesError } from '../errors';
import type { DcgmGpuReading } from '../sources/dcgm-exporter';

/**
 * Captured agent batches as replay readings: what a real agent sent from real GPUs (the
 * `batches.jsonl` of `test/fixtures/captured/<gpu>-driver-<version>/`) turned into the per-window
 * readings `ReplayGpuSource` plays, so `gpu-sentinel local` can replay a real GPU read through the
 * real NVML (GPM included) as it replays dcgm-exporter scrapes. Pure: text in, readings out.
 */

/** What the captured agent said about itself, kept for the replayed batches' `agent`. */
export type CapturedAgentInfo = Pick<
  AgentInfo,
  'profiling_source' | 'driver_version' | 'nvml_version' | 'cuda_version'
>;

/** A captured batches file, parsed. */
export interface CapturedBatches {
  /**
   * One entry per captured flush window (the windows of all GPUs that share a start), in time order:
   * each GPU's identity and its window's metrics, its pod (`window.k8s`) as the workload labels a
   * dcgm-exporter scrape would carry. Horizon windows are left out: the replay's own agent loop
   * builds its horizons from these.
   */
  readonly windows: readonly (readonly DcgmGpuReading[])[];
  /** From the first batch: the profiling source and the driver, NVML and CUDA versions it read. */
  readonly agent: CapturedAgentInfo;
}

/**
 * Parses a captured batches file: one JSON object a line, either the loopback stub's record
 * `{ "received_ms": …, "content_encoding": …, "batch": { … } }` (as `capture-on-gpu.sh` keeps each
 * body) or a bare batch. Each batch must pass the wire contract (`parseBatch`), judged at the time
 * it was received (`received_ms`) or else sent (`sent_at`), so a capture of any age is read. Blank
 * lines are skipped.
 *
 * @param text - the file's text (decompressed)
 * @returns the flush windows as readings, and the agent's own info
 * @throws {CapturedBatchesError} naming the line, when a line is not JSON, is not a batch the
 *   contract accepts, holds a MIG slice window (not replayed), or when no line has a flush window
 */
export function parseCapturedBatches(text: string): CapturedBatches {
  const byStart = new Map<number, DcgmGpuReading[]>();
  let agent: CapturedAgentInfo | undefined;
  const lines = text.split('\n');
  lines.forEach((raw, i) => {
    const line = i + 1;
    if (raw.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(raw);
    } catch (cause) {
      throw new CapturedBatchesError(line, `expected a JSON object (${String(cause)})`, { cause });
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json))
      throw new CapturedBatchesError(
        line,
        `expected a JSON object, got ${JSON.stringify(json)?.slice(0, 40)}`,
      );
    const record = json as { received_ms?: unknown; batch?: unknown };
    const body = 'batch' in record ? record.batch : json;
    const sentAt = (body as { sent_at?: unknown } | null)?.sent_at;
    const atMs = typeof record.received_ms === 'number' ? record.received_ms : Date.parse(String(sentAt));
    if (!Number.isFinite(atMs))
      throw new CapturedBatchesError(line, 'expected `received_ms` or a batch with `sent_at` to judge it at');
    let batch: ReturnType<typeof parseBatch>;
    try {
      batch = parseBatch(body, new Date(atMs));
    } catch (cause) {
      const detail = cause instanceof ContractValidationError ? cause.message : String(cause);
      throw new CapturedBatchesError(line, `expected a batch the contract accepts: ${detail}`, { cause });
    }
    agent ??= agentOf(batch.agent);
    for (const window of batch.windows) {
      if (window.kind !== 'flush') continue;
      if (window.gpu_instance_id !== undefined)
        throw new CapturedBatchesError(
          line,
          `expected whole-GPU windows, got a MIG slice (gpu_instance_id ${window.gpu_instance_id}): not replayed`,
        );
      const startMs = Date.parse(window.start);
      const readings = byStart.get(startMs) ?? [];
      readings.push(readingOf(window));
      byStart.set(startMs, readings);
    }
  });
  if (agent === undefined || byStart.size === 0)
    throw new CapturedBatchesError(
      lines.length,
      'expected at least one batch with a flush window, found none',
    );
  const windows = [...byStart.entries()]
    .sort(([a], [b]) => a - b)
    .map(([, readings]) => readings.sort((a, b) => a.gpu.index - b.gpu.index));
  return { windows, agent };
}

function agentOf(info: AgentInfo): CapturedAgentInfo {
  return {
    profiling_source: info.profiling_source,
    ...(info.driver_version === undefined ? {} : { driver_version: info.driver_version }),
    ...(info.nvml_version === undefined ? {} : { nvml_version: info.nvml_version }),
    ...(info.cuda_version === undefined ? {} : { cuda_version: info.cuda_version }),
  };
}

/** A flush window as a reading: its GPU, its metrics, and its pod as dcgm-exporter's workload labels. */
function readingOf(window: GpuWindow): DcgmGpuReading {
  const labels: Record<string, string> = {};
  if (window.k8s !== undefined) {
    labels.namespace = window.k8s.namespace;
    labels.pod = window.k8s.pod;
    if (window.k8s.container !== undefined) labels.container = window.k8s.container;
  }
  return { gpu: window.gpu, metrics: window.metrics, labels };
}
