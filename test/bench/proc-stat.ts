import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of `/proc/<pid>/stat` times (USER_HZ: 100 on Linux x86-64 and arm64). */
export const CLOCK_TICKS_PER_S = 100;

/** The fields of a `/proc/<pid>/stat` line after `comm`, and `comm` itself (which may hold spaces). */
function parseStat(stat: string): { comm: string; fields: string[] } {
  return {
    comm: stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')),
    // After the comm field: state is fields[0], so utime=11, stime=12, cutime=13, cstime=14.
    fields: stat.slice(stat.lastIndexOf(')') + 2).split(' '),
  };
}

/**
 * CPU of a process from `/proc/<pid>/stat`, µs: its own `utime + stime` (all its threads) and
 * its reaped children's `cutime + cstime`. 10 ms resolution.
 *
 * @param pid - a process id, or `self`
 * @throws {Error} (ENOENT) when the process is gone
 */
export function processCpuUs(pid: number | 'self'): { ownUs: number; childrenUs: number } {
  const { fields } = parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  const us = (a: number, b: number): number =>
    ((Number(fields[a]) + Number(fields[b])) * 1e6) / CLOCK_TICKS_PER_S;
  return { ownUs: us(11, 12), childrenUs: us(13, 14) };
}

/**
 * CPU µs per thread group of a process (`/proc/<pid>/task/<tid>/stat` utime + stime), keyed by
 * the thread's `comm` (`main` for the main thread; V8's GC helpers, libuv's pool … by their names).
 *
 * @param pid - a process id, or `self`
 */
export function threadCpuUs(pid: number | 'self'): Map<string, number> {
  const out = new Map<string, number>();
  const main = pid === 'self' ? String(process.pid) : String(pid);
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
    } catch {
      continue; // the thread ended meanwhile
    }
    const { comm, fields } = parseStat(stat);
    const key = tid === main ? 'main' : comm;
    out.set(key, (out.get(key) ?? 0) + ((Number(fields[11]) + Number(fields[12])) * 1e6) / CLOCK_TICKS_PER_S);
  }
  return out;
}

/**
 * A field of `/proc/<pid>/status` in kB, e.g. `VmHWM` (peak RSS) or `VmRSS`; NaN when absent.
 *
 * @param pid - a process id, or `self`
 * @param field - the field name
 * @throws {Error} (ENOENT) when the process is gone
 */
export function statusKb(pid: number | 'self', field: string): number {
  const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return match ? Number(match[1]) : Number.NaN;
}
