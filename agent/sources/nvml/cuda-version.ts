/**
 * Formats the CUDA driver version integer of `nvmlSystemGetCudaDriverVersion_v2`
 * (`1000 × major + 10 × minor`) as `major.minor`.
 *
 * @param version - e.g. 12040; a positive integer
 * @returns e.g. `12.4`, or `undefined` when `version` is not a positive integer
 * @example
 * formatCudaVersion(12020); // '12.2'
 */
export function formatCudaVersion(version: number): string | undefined {
  if (!Number.isInteger(version) || version <= 0) return undefined;
  return `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`;
}
