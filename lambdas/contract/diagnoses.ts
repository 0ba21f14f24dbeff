/**
 * The efficiency diagnosis of a GPU over the trailing horizon: the leaf of the efficiency decision tree
 * (SM active < 30 % → data loading / CPU preprocessing / small batch; 30–70 % → tensor idle;
 * > 70 % → memory or compute bound), plus `idle`/`held_idle` (no work), `fake_load` (GPU util high,
 * SM active low), `throttled` (clocks held down by heat or power) and `unknown` (no profiling source:
 * SM activity not measured, so no leaf can be named), and `awaiting_diagnosis` (the GPU's first
 * minutes, before its horizon covers enough to judge: the cause is not named yet, but the waste is
 * not filed under no cause). Stored with every flush window so wasted dollars have a cause.
 *
 * Published with the contract so the pipeline's rules and the agent's simulated workloads (one per
 * diagnosis the tree names) share one list.
 */
export const DIAGNOSES = [
  'idle',
  'held_idle',
  'fake_load',
  'input_bound',
  'cpu_bound',
  'low_occupancy',
  'tensor_idle',
  'memory_bound',
  'compute_bound',
  'throttled',
  'unknown',
  'awaiting_diagnosis',
] as const;
/** Diagnosis union, see {@link DIAGNOSES}. */
export type Diagnosis = (typeof DIAGNOSES)[number];
