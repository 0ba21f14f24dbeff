import type { GpuProcess } from '../../lambdas/contract';

/** Most processes in one window (`GpuWindowSchema.processes` max 64). */
export const MAX_WINDOW_PROCESSES = 64;

/**
 * Union of the processes seen in a window, by pid: each pid once, with the largest memory any
 * sample reported for it (`fb_used_bytes` absent when no sample knew it); sorted by memory,
 * largest first (unknown memory last), ties by pid ascending; the first
 * {@link MAX_WINDOW_PROCESSES} kept.
 *
 * @param pids - the pids of every process of every sample, flattened (integers 0..2^32 − 1)
 * @param fbUsedBytes - the memory of each, bytes, `NaN` when unknown; same length as `pids`
 * @returns at most 64 processes; `[]` when `pids` is empty
 */
export function unionProcesses(pids: Float64Array, fbUsedBytes: Float64Array): GpuProcess[] {
  const largest = new Map<number, number>();
  for (let i = 0; i < pids.length; i++) {
    const pid = pids[i]!;
    const memory = fbUsedBytes[i] ?? Number.NaN;
    const known = largest.get(pid);
    if (known === undefined || Number.isNaN(known) || memory > known) largest.set(pid, memory);
  }
  return [...largest]
    .sort(([pidA, memA], [pidB, memB]) => rank(memB) - rank(memA) || pidA - pidB)
    .slice(0, MAX_WINDOW_PROCESSES)
    .map(([pid, memory]) => (Number.isNaN(memory) ? { pid } : { pid, fb_used_bytes: memory }));
}

function rank(memory: number): number {
  return Number.isNaN(memory) ? -1 : memory;
}
