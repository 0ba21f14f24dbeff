/**
 * MIG (Multi-Instance GPU) rules of the wire contract as plain values (no zod), shared by the API's
 * schema, the pipeline's ledger and the host agent: what a GPU instance id and profile look like, and
 * how much of its GPU's compute a profile holds. Source: NVIDIA MIG user guide ("Supported GPUs",
 * "Supported MIG Profiles").
 */
import type { FieldPattern } from './field-rules';

/**
 * A MIG GPU instance profile as NVML and dcgm-exporter's `GPU_I_PROFILE` name it:
 * `<n>g.<memory>gb`, optionally with an option suffix (`1g.10gb`, `3g.40gb`, `7g.80gb`,
 * `1g.10gb+me`, `1g.23gb+gfx`, `1g.47gb+me.all`). `<n>` is the instance's compute slices, 1..8.
 */
export const MIG_PROFILE_RULE: FieldPattern = {
  pattern: /^[1-8]g\.[0-9]{1,4}gb(\+[a-z]{1,8}(\.[a-z]{1,8})?)?$/,
  message: 'expected a MIG GPU instance profile like 1g.10gb or 3g.40gb',
};

/**
 * Largest GPU instance id accepted (`GPU_I_ID`, NVML `nvmlGpuInstanceInfo_t.id`). A GPU holds at
 * most 7 instances; NVML numbers them by placement (the 1g instances of an A100/H100 are 7..14), so
 * 63 leaves room for future placements without accepting nonsense.
 */
export const MAX_GPU_INSTANCE_ID = 63;

/**
 * Compute slices of a whole GPU in MIG mode: 4 on an A30, 7 on A100, H100, H200 and newer.
 * Source: NVIDIA MIG user guide, "Supported GPUs" (A30: up to 4 instances, others up to 7).
 *
 * @param gpuName - the GPU's product name (`nvmlDeviceGetName`, dcgm-exporter `modelName`), e.g. `NVIDIA A30`;
 *   absent: 7
 * @returns 4 or 7
 */
export function migComputeSlices(gpuName: string | undefined): number {
  return gpuName !== undefined && /\bA30\b/.test(gpuName) ? 4 : 7;
}

/**
 * The compute slices a profile holds: `<n>g.<mem>gb…` → n.
 *
 * @param profile - a GPU instance profile, e.g. `3g.40gb`, `1g.10gb+me`
 * @returns n ≥ 1, or `undefined` when the profile does not start `<n>g.`
 */
export function migProfileSlices(profile: string | undefined): number | undefined {
  const m = profile === undefined ? null : /^(\d+)g\./.exec(profile);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= 1 ? n : undefined;
}

/**
 * The share of its GPU's compute an instance profile holds: `<n>g.<mem>gb` → n / slices, at most 1.
 * The ledger prices a slice at the GPU's price share × this (docs/detection.md §4).
 *
 * @param profile - a GPU instance profile, e.g. `3g.40gb`, `1g.10gb+me`
 * @param slices - the GPU's compute slices ({@link migComputeSlices})
 * @returns 0..1, or `undefined` when the profile is not `<n>g…`
 * @example
 * migComputeShare('3g.40gb', migComputeSlices('NVIDIA A100-SXM4-80GB')); // 3 / 7
 */
export function migComputeShare(profile: string | undefined, slices: number): number | undefined {
  const n = migProfileSlices(profile);
  return n === undefined ? undefined : Math.min(1, n / slices);
}
