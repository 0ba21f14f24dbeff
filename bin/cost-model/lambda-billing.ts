/** How Lambda bills a function's duration, for the cost model. */

/**
 * Memory that buys a Lambda function one full vCPU, MB: "At 1,769 MB, a function has the equivalent
 * of one vCPU" (Lambda developer guide, "Configure Lambda function memory"). Below it the function
 * gets that share of a core, so CPU-bound work takes longer by 1,769 / memory (the handler is
 * single-threaded JavaScript: more than one vCPU buys it nothing).
 */
export const LAMBDA_MIB_PER_VCPU = 1769;

/**
 * Billed duration of one ingest invocation, ms: its CPU time stretched by the share of a vCPU its
 * memory buys ({@link LAMBDA_MIB_PER_VCPU}), plus the AWS calls it waits on, rounded up to Lambda's
 * 1 ms billing step. `cpuMs` ≥ 0 is CPU time measured on one full core; `memoryMib` > 0.
 */
export function lambdaBilledMs(cpuMs: number, memoryMib: number, waitMs: number): number {
  const vcpuShare = Math.min(1, memoryMib / LAMBDA_MIB_PER_VCPU);
  return Math.ceil(cpuMs / vcpuShare + waitMs);
}
