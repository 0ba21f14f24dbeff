/**
 * What each cause of wasted dollars means and what fixes it, in words a finance reader can forward
 * to the team that owns the GPUs: the leaves of the efficiency tree of docs/design.md §6 (SM active
 * < 30 % → data loading / CPU preprocessing / small batch; 30–70 % → tensor cores idle; > 70 % →
 * memory or compute bound), plus no work at all, fake load, throttling and no profiling counters.
 */

/** One cause: what it is and what to do. */
export interface CauseExplanation {
  /** What the GPUs were doing, one sentence. */
  readonly what: string;
  /** What fixes it, one sentence. */
  readonly fix: string;
}

/**
 * The explanation of every diagnosis (the cause stored with each window), by diagnosis name. Keyed
 * by name rather than by the `Diagnosis` union so a diagnosis the contract adds later reads as a
 * missing entry in `report-causes.test.ts` (every one of `DIAGNOSES` must be explained), not as a
 * type error in code that merges it.
 */
export const CAUSE_EXPLANATIONS: Readonly<Record<string, CauseExplanation>> = {
  idle: {
    what: 'GPUs billed with no process and no work (< 1 % SM activity).',
    fix: 'Release idle instances (scale the group in, stop the job’s nodes) or schedule work on them.',
  },
  held_idle: {
    what: 'A process or pod holds the GPUs (memory allocated) but runs no work.',
    fix: 'End finished or stuck jobs and notebooks that keep the GPU; set idle timeouts.',
  },
  fake_load: {
    what: 'GPU utilization reads high while the streaming multiprocessors are mostly idle (tiny kernels, busy-waiting).',
    fix: 'Batch the work into larger kernels; do not judge efficiency by GPU utilization alone.',
  },
  input_bound: {
    what: 'The GPUs wait for data: low SM activity with bursts of PCIe transfers (data loading).',
    fix: 'More DataLoader workers, pinned memory and prefetching; faster storage or a local cache.',
  },
  cpu_bound: {
    what: 'The GPUs wait for the CPU: low SM activity and little PCIe traffic (preprocessing, Python overhead).',
    fix: 'Move preprocessing to the GPU or to more CPU workers; use CUDA graphs or a compiled model.',
  },
  low_occupancy: {
    what: 'Work runs on a small part of each GPU (low SM occupancy): batches or kernels too small.',
    fix: 'Increase the batch size, fuse small operations, or share the GPU (MIG, MPS) among jobs.',
  },
  tensor_idle: {
    what: 'The GPUs compute, but without their tensor cores (no mixed precision, unaligned shapes).',
    fix: 'Enable mixed precision (bf16/fp16, AMP) and align matrix dimensions to multiples of 8.',
  },
  memory_bound: {
    what: 'Memory bandwidth limits the work (DRAM activity above 80 %).',
    fix: 'Quantize, use activation checkpointing or fused kernels, or change the model architecture.',
  },
  compute_bound: {
    what: 'The GPUs are busy; the remaining waste is the share of time their SMs had no work.',
    fix: 'Little to gain from tuning; profile the remaining gaps if the share is large.',
  },
  throttled: {
    what: 'Clocks held down by heat or power limits, so the same work costs more GPU-hours.',
    fix: 'Check cooling and power capping on the host; open an AWS support case if it persists.',
  },
  unknown: {
    what: 'No profiling counters on these GPUs, so no cause can be named (efficiency from GPU utilization).',
    fix: 'Enable NVML GPM (H100 and later) or run dcgm-exporter so the agent reads SM activity.',
  },
  awaiting_diagnosis: {
    what: 'A GPU’s first minutes, before its 15-minute horizon covers enough to name a cause.',
    fix: 'Nothing to fix yet; the cause is named once the horizon is full.',
  },
};

/** The explanation of waste stored without a diagnosis (a window sent without a horizon). */
export const UNDIAGNOSED_EXPLANATION: CauseExplanation = {
  what: 'Waste of windows stored without a diagnosis (sent without their 15-minute horizon, e.g. an agent that just started).',
  fix: 'Nothing to fix in the jobs; these windows are diagnosed once the agent has a full horizon.',
};

/**
 * The explanation of a cause key as reports show it.
 *
 * @param cause - a diagnosis (see `DIAGNOSES`), or anything else (the unattributed group) for {@link UNDIAGNOSED_EXPLANATION}
 * @returns what it is and what fixes it
 */
export function explainCause(cause: string): CauseExplanation {
  return CAUSE_EXPLANATIONS[cause] ?? UNDIAGNOSED_EXPLANATION;
}
