import { afterEach, describe, expect, it } from 'vitest';
import { setFakeNvmlClock } from '../setup/fake-nvml';
import { closeAll, energy, openGpu0, power, violation } from './fake-nvml-calls';

// An agent driven on a virtual clock (test/bench/fixtures/agent-batch.ts) polls 60 s of virtual time
// in a few ms of real time. The fake's energy and violation counters grew with the real clock, so
// that batch carried 0.67 W for a GPU drawing 613 W. `setFakeNvmlClock` makes them follow the
// virtual one.

function read<T>(call: (h: unknown, out: T[]) => number, handle: unknown, fallback: T): T {
  const out = [fallback];
  expect(call(handle, out)).toBe(0);
  return out[0] as T;
}

afterEach(() => {
  setFakeNvmlClock(undefined);
  closeAll();
});

describe('the fake NVML on a virtual clock', () => {
  it('grows the energy counter by power × virtual time, not by the real time the calls take', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    setFakeNvmlClock(t0);
    const h = openGpu0({ UTIL_GPU: 97 });
    const mw = read((x, o: number[]) => power(x, o), h, 0);
    const before = BigInt(read((x, o: bigint[]) => energy(x, o), h, 0n));
    setFakeNvmlClock(t0 + 10_000);
    const after = BigInt(read((x, o: bigint[]) => energy(x, o), h, 0n));
    // mJ over 10 s at `mw` milliwatts: 10 × mw, to the mJ the counter truncates to.
    expect(Number(after - before)).toBeGreaterThanOrEqual(10 * mw - 1);
    expect(Number(after - before)).toBeLessThanOrEqual(10 * mw + 1);
    expect(mw).toBeGreaterThan(600_000); // a busy H100 (p5 preset, 97 % utilization): 613 W
  });

  it('moves the violation counter and its reference time with the virtual clock', () => {
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    setFakeNvmlClock(t0);
    const h = openGpu0({ POWER_VIOLATION_PCT: 25 });
    const a = read((x, o: Record<string, bigint>[]) => violation(x, 0, o), h, {});
    setFakeNvmlClock(t0 + 4_000);
    const b = read((x, o: Record<string, bigint>[]) => violation(x, 0, o), h, {});
    expect(Number(BigInt(b.referenceTime as bigint) - BigInt(a.referenceTime as bigint))).toBe(4_000_000); // µs
    // 25 % of 4 s, in ns
    expect(Number(BigInt(b.violationTime as bigint) - BigInt(a.violationTime as bigint))).toBeCloseTo(
      1e9,
      -3,
    );
  });

  it('follows the real clock again once the virtual one is cleared', () => {
    setFakeNvmlClock(Date.parse('2026-01-01T00:00:00Z'));
    const h = openGpu0({ POWER_VIOLATION_PCT: 25 });
    const virtualUs = Number(
      read((x, o: Record<string, bigint>[]) => violation(x, 0, o), h, {}).referenceTime,
    );
    setFakeNvmlClock(undefined);
    const realUs = Number(read((x, o: Record<string, bigint>[]) => violation(x, 0, o), h, {}).referenceTime);
    // The real reference time is CLOCK_MONOTONIC (seconds since boot), far below 2026 in µs since 1970.
    expect(virtualUs).toBe(Date.parse('2026-01-01T00:00:00Z') * 1000);
    expect(realUs).toBeLessThan(virtualUs / 10);
  });
});
