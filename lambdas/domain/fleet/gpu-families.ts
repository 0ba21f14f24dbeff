import { GPU_COUNT_BY_INSTANCE_TYPE } from '../pricing';

/**
 * The GPU instance families gpu-sentinel prices and counts GPUs for (`GPU_COUNT_BY_INSTANCE_TYPE`),
 * as EC2 `instance-type` filter values with a wildcard: `g5.*`, `p5.*`, … (EC2 filters accept `*`).
 * `g6.*` does not match `g6e.xlarge`: every family is listed on its own.
 */
export const GPU_INSTANCE_TYPE_FILTERS: readonly string[] = Object.freeze(
  [...new Set(Object.keys(GPU_COUNT_BY_INSTANCE_TYPE).map((t) => `${t.slice(0, t.indexOf('.'))}.*`))].sort(),
);

/**
 * True when an instance type belongs to a GPU family of {@link GPU_INSTANCE_TYPE_FILTERS}.
 *
 * @param instanceType - EC2 instance type, e.g. `p5.48xlarge`
 * @returns whether the fleet rules watch it
 */
export function isGpuInstanceType(instanceType: string): boolean {
  const dot = instanceType.indexOf('.');
  return dot > 0 && GPU_INSTANCE_TYPE_FILTERS.includes(`${instanceType.slice(0, dot)}.*`);
}
