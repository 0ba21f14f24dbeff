import koffi from 'koffi';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { closeAll, energy, fieldValues, openGpu0, replay, violation } from './fake-nvml-calls';

// The fake's cost model (FAKE_NVML_CALL_COST=h200-580) spins on the calling thread's CPU clock for
// the H200's measured cost of each call (test/fake-nvml/fake-nvml.c, H200_580_COSTS). These tests
// read the calling thread's own CPU clock (CLOCK_THREAD_CPUTIME_ID, the clock the fake spins on)
// around the calls: never less than the spin, and loose upper bounds. Not the process's CPU time:
// on a loaded machine V8's GC and compiler threads and vitest's own threads add to that (a CI run
// saw 309 µs a call for a 151 µs spin), which says nothing about the model.

const libc = koffi.load('libc.so.6');
const timespec = koffi.struct('timespecCost', { tv_sec: 'int64', tv_nsec: 'int64' });
const clockGettime = libc.func('clock_gettime', 'int', ['int', koffi.out(koffi.pointer(timespec))]);
/** Linux's clockid_t for the calling thread's CPU clock (<time.h>). */
const CLOCK_THREAD_CPUTIME_ID = 3;

/** CPU time of the calling (main JS) thread, µs, from clock_gettime(CLOCK_THREAD_CPUTIME_ID). */
function cpuUs(): number {
  const ts = { tv_sec: 0, tv_nsec: 0 };
  expect(clockGettime(CLOCK_THREAD_CPUTIME_ID, ts)).toBe(0);
  return Number(ts.tv_sec) * 1e6 + Number(ts.tv_nsec) / 1e3;
}

/** Mean CPU µs of one call of `call` over `n` calls, after one warm-up call; each must answer SUCCESS (0). */
function meanCpuUs(n: number, call: () => number): number {
  expect(call()).toBe(0);
  const start = cpuUs();
  for (let i = 0; i < n; i++) expect(call()).toBe(0);
  return (cpuUs() - start) / n;
}

function fieldRequest(ids: readonly number[]): Record<string, unknown>[] {
  return ids.map((fieldId) => ({
    fieldId,
    scopeId: 0xffff_ffff,
    timestamp: 0,
    latencyUsec: 0,
    valueType: 0,
    nvmlReturn: 0,
    value: { ullVal: 0 },
  }));
}

const CALLS = {
  nvmlDeviceGetTotalEnergyConsumption: (d) => energy(d, [0]),
  nvmlDeviceGetViolationStatus: (d) => violation(d, 0, [{}]),
  nvmlDeviceGetPcieReplayCounter: (d) => replay(d, [0]),
  'nvmlDeviceGetFieldValues [82, 197, 198]': (d) => fieldValues(d, 3, fieldRequest([82, 197, 198])),
  'nvmlDeviceGetFieldValues [82, 198]': (d) => fieldValues(d, 2, fieldRequest([82, 198])),
  'nvmlDeviceGetFieldValues [82]': (d) => fieldValues(d, 1, fieldRequest([82])),
} satisfies Record<string, (d: unknown) => number>;

beforeAll(() => {
  // Warm koffi's call paths before any timing.
  openGpu0({});
  for (const call of Object.values(CALLS)) call(openGpu0({}));
  closeAll();
});

afterEach(closeAll);

describe('the fake NVML call cost model', () => {
  it.each([
    // name, calls, the table's µs (fake-nvml.c)
    ['nvmlDeviceGetTotalEnergyConsumption', 10, 3901],
    ['nvmlDeviceGetViolationStatus', 20, 714],
    ['nvmlDeviceGetPcieReplayCounter', 50, 151],
    ['nvmlDeviceGetFieldValues [82, 197, 198]', 50, 277.7],
    ['nvmlDeviceGetFieldValues [82, 198]', 50, 139.7],
  ] as const)(
    'spends %s ≈ the H200 figure of CPU time a call with h200-580 (%i calls)',
    (name, n, tableUs) => {
      // Prepare
      const device = openGpu0({ CALL_COST: 'h200-580' });
      // Act
      const us = meanCpuUs(n, () => CALLS[name](device));
      // Assess
      expect(us).toBeGreaterThanOrEqual(tableUs * 0.98);
      expect(us).toBeLessThan(tableUs * 1.5 + 50);
    },
  );

  it('spends a few µs on a plain field (HBM temperature, 2.7 µs on the H200) with h200-580', () => {
    const device = openGpu0({ CALL_COST: 'h200-580' });
    const us = meanCpuUs(200, () => CALLS['nvmlDeviceGetFieldValues [82]'](device));
    expect(us).toBeGreaterThanOrEqual(2.7 * 0.98);
    expect(us).toBeLessThan(60);
  });

  it.each(Object.keys(CALLS) as (keyof typeof CALLS)[])(
    'spends next to nothing on %s with the model off (the default)',
    (name) => {
      // Prepare
      const device = openGpu0({});
      // Act
      const us = meanCpuUs(200, () => CALLS[name](device));
      // Assess: the cheapest dear call (PCIe replay) costs 151 µs with the model on; koffi's own
      // marshalling and this process's GC make a few µs to tens of µs here
      expect(us).toBeLessThan(60);
    },
  );

  it('spends nothing with an unknown model name, as with none', () => {
    const device = openGpu0({ CALL_COST: 'h100-535' as 'h200-580' });
    expect(meanCpuUs(10, () => CALLS.nvmlDeviceGetTotalEnergyConsumption(device))).toBeLessThan(60);
  });

  it('touches FAKE_NVML_INIT_RSS_MB of heap at nvmlInit_v2, as the real library holds ≈ 18 MiB', () => {
    // Prepare
    const before = process.memoryUsage().rss;
    // Act
    openGpu0({ INIT_RSS_MB: 18 });
    // Assess
    expect(process.memoryUsage().rss - before).toBeGreaterThanOrEqual(17 * 1024 * 1024);
  });
});
