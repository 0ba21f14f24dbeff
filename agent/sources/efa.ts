import { type Dirent, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { EfaWindow } from '../../lambdas/contract';
import { systemClock } from '../clock';

/**
 * EFA source: reads the cumulative `hw_counters` of every RDMA device under
 * `/sys/class/infiniband` (port counters in `<dev>/ports/<p>/hw_counters/`, device counters in
 * `<dev>/hw_counters/`, split apart by EFA driver r1.14.0) and turns them into per-window deltas
 * (contract `EfaWindow`). Every counter file found is read, not a fixed list, so counters added
 * by newer drivers (the r2.17.0 network counters `retrans_*`, `impaired_remote_conn_events`,
 * `unresponsive_remote_events`) are carried as soon as they exist, and counters an older driver
 * lacks are absent, never 0. Source: docs/nvml.md §10 (EFA driver `efa_get_hw_stats`).
 */

/** Where the kernel exposes RDMA devices (EFA, and any other RDMA NIC). */
export const EFA_SYSFS_ROOT = '/sys/class/infiniband';

/** Counter files that are not counters: `lifespan` is rdma-core's value-cache lifetime, ms. */
const NOT_COUNTERS = new Set(['lifespan']);

/** Contract regexes (EfaWindowSchema): device name and counter name. */
const DEVICE_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const COUNTER_RE = /^[a-z][a-z0-9_]{0,63}$/;
const U64_RE = /^\d{1,20}$/;
const U64_MAX = 2n ** 64n - 1n;
/** Most counters per device/port the contract accepts in one `deltas` record. */
const MAX_COUNTERS = 128;

/** Options of {@link EfaSource}. */
export interface EfaSourceOptions {
  /** The sysfs RDMA class directory (tests point it at a generated tree). @default '/sys/class/infiniband' */
  readonly root?: string;
  /** The clock, read when `sample()` is called without a time. @default systemClock */
  readonly clock?: () => Date;
  /**
   * Called once per condition an operator can act on (a device gone, a file unreadable, a value
   * that is not a decimal u64); never per sample.
   * @default no-op
   */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/** One counter's state: the last value read and the non-negative steps summed in this window. */
interface CounterTrack {
  last: bigint;
  delta: bigint;
  /** At least one step was taken in the current window. */
  stepped: boolean;
}

/** One device/port (port 0 = device counters). */
interface PortTrack {
  readonly device: string;
  readonly port: number;
  readonly counters: Map<string, CounterTrack>;
}

/**
 * Reads EFA `hw_counters` and yields per-window counter deltas.
 *
 * Call `sample(now)` at each window boundary (just before `window(start, end)` at each flush);
 * more often only narrows what a mid-window counter reset can hide. Deltas are the sum of the
 * non-negative steps between consecutive samples, so a counter that goes down (driver reload,
 * device reset) counts from its new value instead of going negative. The first sample of a
 * device/port is its baseline: a device first seen mid-window gives deltas from that sample on.
 * A device that disappears keeps its last values (warned once) and continues from them if it
 * comes back. `sample()` never throws: an unreadable directory or file is skipped, warned once.
 *
 * Cost: one `readdir` per directory and one small read per counter file per `sample()`: a
 * p5.48xlarge has 32 devices × ~35 files, ~15 ms of one core per sample measured on a tmpfs tree
 * (2-core dev machine), so sample once per flush (10 s), not every 1 s poll, to stay well under 1%.
 *
 * @example
 * const efa = new EfaSource();
 * efa.sample(new Date());            // every poll
 * const efaWindows = efa.window(start, end); // every flush → batch.efa
 */
export class EfaSource {
  private readonly root: string;
  private readonly clock: () => Date;
  private readonly onWarning: (message: string, data?: Record<string, unknown>) => void;
  private readonly tracks = new Map<string, PortTrack>();
  private readonly warned = new Set<string>();
  /** Devices seen in the last sample, to warn once when one goes away. */
  private present = new Set<string>();
  private sampledAt: Date | undefined;

  /** @param opts - see {@link EfaSourceOptions} */
  constructor(opts: EfaSourceOptions = {}) {
    this.root = opts.root ?? EFA_SYSFS_ROOT;
    this.clock = opts.clock ?? systemClock;
    this.onWarning = opts.onWarning ?? (() => {});
  }

  /** Time of the last `sample()`; `undefined` before the first. */
  get lastSampleAt(): Date | undefined {
    return this.sampledAt;
  }

  /**
   * Reads every counter of every device and port once and adds the steps since the previous
   * sample to the current window. Never throws.
   *
   * @param now - the sample time, from the injected clock; kept as {@link EfaSource.lastSampleAt} (the
   *   windows carry the times given to `window()`) @default `clock()`
   */
  sample(now: Date = this.clock()): void {
    this.sampledAt = now;
    const devices = this.list(this.root, 'the RDMA class directory');
    if (devices === undefined) return;
    const seen = new Set<string>();
    for (const entry of devices) {
      const device = entry.name;
      if (!DEVICE_RE.test(device)) {
        this.warnOnce(`device:${device}`, 'RDMA device name outside the contract; device skipped', {
          device,
        });
        continue;
      }
      const dir = join(this.root, device);
      let found = false;
      const ports = this.list(join(dir, 'ports'), `ports of ${device}`, true);
      for (const p of ports ?? []) {
        const port = Number(p.name);
        if (!/^\d{1,3}$/.test(p.name) || port < 1 || port > 255) continue;
        found = this.readCounters(device, port, join(dir, 'ports', p.name, 'hw_counters')) || found;
      }
      found = this.readCounters(device, 0, join(dir, 'hw_counters')) || found;
      if (found) seen.add(device);
    }
    for (const device of this.present) {
      if (!seen.has(device))
        this.onWarning('EFA device disappeared from sysfs; keeping its last counter values', {
          device,
          root: this.root,
        });
    }
    this.present = seen;
  }

  /**
   * Closes the window: per device/port, the counter deltas since the previous window (or since
   * the device's first sample), then starts the next window from the current values.
   * A counter is present only when it was read at least twice across the window boundary (its
   * delta is known); a device/port with no such counter is left out. A step too large for a safe
   * integer (a garbage value after a reset) leaves that counter absent, warned once.
   *
   * A p5.48xlarge (32 EFA devices, 1 port each) gives 64 entries (32 port + 32 device): six
   * windows fit the contract's `MAX_EFA_PORTS_PER_BATCH` (384); the batch builder splits beyond.
   *
   * @param start - window start (contract `start`)
   * @param end - window end, after `start`
   * @returns contract `EfaWindow`s ordered by device (numeric-aware) then port (0 first)
   * @throws {RangeError} when `end` is not after `start`
   */
  window(start: Date, end: Date): EfaWindow[] {
    if (!(end.getTime() > start.getTime()))
      throw new RangeError(
        `Expected \`end\` after \`start\`, got start ${start.toISOString()} and end ${end.toISOString()}`,
      );
    const out: EfaWindow[] = [];
    const sorted = [...this.tracks.values()].sort(
      (a, b) => a.device.localeCompare(b.device, 'en', { numeric: true }) || a.port - b.port,
    );
    for (const track of sorted) {
      const deltas: Record<string, number> = {};
      let n = 0;
      for (const [name, c] of [...track.counters.entries()].sort(([a], [b]) => (a < b ? -1 : 1))) {
        if (!c.stepped) continue;
        const delta = c.delta;
        c.delta = 0n;
        c.stepped = false;
        if (delta > BigInt(Number.MAX_SAFE_INTEGER)) {
          this.warnOnce(
            `big:${track.device}:${track.port}:${name}`,
            'EFA counter delta too large; left absent',
            {
              device: track.device,
              port: track.port,
              counter: name,
              delta: delta.toString(),
            },
          );
          continue;
        }
        if (n >= MAX_COUNTERS) {
          this.warnOnce(
            `many:${track.device}:${track.port}`,
            'more EFA counters than the contract takes; extra left out',
            {
              device: track.device,
              port: track.port,
              max: MAX_COUNTERS,
            },
          );
          continue;
        }
        deltas[name] = Number(delta);
        n++;
      }
      if (n > 0)
        out.push({
          start: start.toISOString(),
          end: end.toISOString(),
          device: track.device,
          port: track.port,
          deltas,
        });
    }
    return out;
  }

  /** Reads one hw_counters directory; returns whether it existed. */
  private readCounters(device: string, port: number, dir: string): boolean {
    const files = this.list(dir, `hw_counters of ${device} port ${port}`, true);
    if (files === undefined) return false;
    const key = `${device}\0${port}`;
    let track = this.tracks.get(key);
    if (!track) {
      track = { device, port, counters: new Map() };
      this.tracks.set(key, track);
    }
    for (const f of files) {
      const name = f.name;
      if (NOT_COUNTERS.has(name)) continue;
      const path = join(dir, name);
      if (!COUNTER_RE.test(name)) {
        this.warnOnce(`name:${name}`, 'EFA counter name outside the contract; counter skipped', { path });
        continue;
      }
      if (f.isDirectory()) continue;
      let text: string;
      try {
        text = readFileSync(path, 'latin1').trim();
      } catch (cause) {
        this.warnOnce(`read:${path}`, 'EFA counter file unreadable; skipped', { path, error: String(cause) });
        continue;
      }
      if (!U64_RE.test(text) || BigInt(text) > U64_MAX) {
        this.warnOnce(`value:${path}`, 'EFA counter is not a decimal u64; skipped', {
          path,
          value: text.slice(0, 40),
        });
        continue;
      }
      const value = BigInt(text);
      const c = track.counters.get(name);
      if (!c) {
        track.counters.set(name, { last: value, delta: 0n, stepped: false });
        continue;
      }
      c.delta += value >= c.last ? value - c.last : value;
      c.last = value;
      c.stepped = true;
    }
    return true;
  }

  /** Lists a directory; `undefined` when it does not exist (silently if `optional`) or cannot be read. */
  private list(dir: string, what: string, optional = false): Dirent[] | undefined {
    try {
      return readdirSync(dir, { withFileTypes: true });
    } catch (cause) {
      const code = (cause as NodeJS.ErrnoException).code;
      if (optional && (code === 'ENOENT' || code === 'ENOTDIR')) return undefined;
      this.warnOnce(`dir:${dir}`, `cannot list ${what}; skipped`, { path: dir, error: String(cause) });
      return undefined;
    }
  }

  private warnOnce(key: string, message: string, data: Record<string, unknown>): void {
    if (this.warned.has(key)) return;
    this.warned.add(key);
    this.onWarning(message, data);
  }
}
