import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  aggregateWindow,
  type GpuSample,
  HorizonTracker,
  WindowAggregationError,
  WindowOptionsError,
} from '../../../agent/window';
import { MAX_HORIZON_WINDOW_S } from '../../../lambdas/contract';
import { at, busySample, dateAt, expectContractValid, GPU, START } from './samples';

/** The flush window of the same samples, relabelled: what a horizon window must equal. */
function expectedHorizon(samples: readonly GpuSample[], startMs: number, end: Date) {
  return { ...aggregateWindow(samples, new Date(startMs), end, GPU), kind: 'horizon' };
}

describe('HorizonTracker', () => {
  it.each([
    { case: 'keeps a sample exactly one horizon older than the newest', seconds: [0, 5, 10], kept: 3 },
    { case: 'evicts a sample just over one horizon older', seconds: [0, 5, 10.001], kept: 2 },
    { case: 'evicts everything before a jump forward', seconds: [0, 1, 2, 30], kept: 1 },
    { case: 'keeps eleven one-second samples of a 10 s horizon', seconds: [...Array(40).keys()], kept: 11 },
  ])('$case', ({ seconds, kept }) => {
    // Prepare
    const tracker = new HorizonTracker({ horizonS: 10 });
    // Act
    for (const second of seconds) tracker.add(at(second, { gpu_util: 0.5 }));
    // Assess
    expect(tracker.sampleCount(0)).toBe(kept);
  });

  it.each([
    { case: 'fresh 900 one-second samples', count: 900 },
    { case: 'samples after the ring has wrapped', count: 2500 },
  ])('gives the same numbers as aggregateWindow over $case', ({ count }) => {
    // Prepare
    const tracker = new HorizonTracker();
    const samples = Array.from({ length: count }, (_, s) => busySample(s + 1));
    for (const sample of samples) tracker.add(sample);
    const end = dateAt(count + 0.5);
    const inHorizon = samples.filter((s) => s.at_ms >= end.getTime() - 900_000);
    // Act
    const window = tracker.window(GPU, end);
    // Assess
    expect(inHorizon.length).toBe(Math.min(count, 900));
    expect(window).toEqual(expectedHorizon(inHorizon, inHorizon[0]!.at_ms, end));
    expect(window?.processes?.length).toBeGreaterThan(0);
    expect(window?.metrics.thermal_throttle_ratio).toBeGreaterThan(0);
    expectContractValid(window);
  });

  it('keeps about one horizon of samples per GPU after 10,000 adds to 8 GPUs', () => {
    // Prepare
    const tracker = new HorizonTracker();
    // Act
    for (let s = 0; s < 10_000; s++) for (let gpu = 0; gpu < 8; gpu++) tracker.add(busySample(s, gpu));
    // Assess
    expect(tracker.gpus()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    for (let gpu = 0; gpu < 8; gpu++) expect(tracker.sampleCount(gpu)).toBe(901);
    expect(tracker.bytes()).toBeLessThan(8 * 2 ** 20);
  });

  it('sizes each ring for the whole horizon at the expected sample interval, so it never grows while the horizon fills', () => {
    // Prepare
    const sized = new HorizonTracker({ sampleIntervalMs: 1000 });
    const doubling = new HorizonTracker();
    const bytes: number[] = [];

    // Act
    for (let s = 0; s < 2_000; s++) {
      const sample = at(s, { gpu_util: (s % 10) / 10, power_w: 300 + (s % 7) });
      sized.add(sample);
      doubling.add(sample);
      if (s === 1 || s === 899 || s === 1_999) bytes.push(sized.bytes());
    }

    // Assess: 900 s at 1 Hz + 2 rows from the first sample on (a column's width settles with its
    // first values: gpu_util 0, then 0.1, which 32 bits cannot hold); the doubling ring ends at 1,024 rows
    expect(new Set(bytes).size).toBe(1);
    expect(sized.bytes()).toBeLessThan(doubling.bytes());
    expect(sized.sampleCount(0)).toBe(901);
    expect(sized.window(GPU, dateAt(1_999))).toEqual(doubling.window(GPU, dateAt(1_999)));
  });

  it('drops the oldest beyond maxSamplesPerGpu and starts the window at the oldest kept', () => {
    // Prepare
    const tracker = new HorizonTracker({ horizonS: 60, maxSamplesPerGpu: 100 });
    const samples = Array.from({ length: 300 }, (_, i) => at(i / 10, { gpu_temp_c: 40 + (i % 7) }));
    // Act
    for (const sample of samples) tracker.add(sample);
    const window = tracker.window(GPU, dateAt(30));
    // Assess
    expect(tracker.sampleCount(0)).toBe(100);
    expect(window).toEqual(expectedHorizon(samples.slice(200), samples[200]!.at_ms, dateAt(30)));
  });

  it('leaves absent what no sample had', () => {
    // Prepare
    const tracker = new HorizonTracker();
    tracker.add(at(0, { gpu_util: 0.25 }));
    tracker.add(at(1, { gpu_util: 0.75, power_w: 5e6 }));
    // Act
    const window = tracker.window(GPU, dateAt(2));
    // Assess
    expect(window?.metrics).toEqual({ gpu_util: 0.5 });
    expect(window).not.toHaveProperty('processes');
    expectContractValid(window);
  });

  it.each([
    { case: 'an unknown GPU', add: [at(0, {}, 1)], end: 5 },
    { case: 'no sample in the horizon', add: [at(0)], end: 901 },
    { case: 'only samples after the end', add: [at(10)], end: 5 },
    { case: 'the only sample at the end itself', add: [at(5)], end: 5 },
  ])('gives no window for $case', ({ add, end }) => {
    // Prepare
    const tracker = new HorizonTracker();
    for (const sample of add) tracker.add(sample);
    // Act / Assess
    expect(tracker.window(GPU, dateAt(end))).toBeUndefined();
  });

  it.each([
    {
      case: 'a sample exactly one horizon before the end',
      add: [0, 50, 100, 200],
      horizonS: 150,
      end: 200,
      start: 50,
    },
    {
      case: 'the first sample inside the horizon',
      add: [0, 40, 100, 180],
      horizonS: 150,
      end: 200,
      start: 100,
    },
    {
      case: 'the oldest sample when it is younger than the horizon',
      add: [120, 130],
      horizonS: 900,
      end: 140,
      start: 120,
    },
    {
      case: 'a span left out of samples after the end',
      add: [0, 1, 2, 3],
      horizonS: 900,
      end: 1.5,
      start: 0,
    },
  ])('starts the window at $case', ({ add, horizonS, end, start }) => {
    // Prepare
    const tracker = new HorizonTracker({ horizonS });
    const samples = add.map((s) => at(s, { gpu_temp_c: 30 + s / 10 }));
    for (const sample of samples) tracker.add(sample);
    // Act
    const window = tracker.window(GPU, dateAt(end));
    // Assess
    const within = samples.filter(
      (s) => s.at_ms >= dateAt(end - horizonS).getTime() && s.at_ms <= dateAt(end).getTime(),
    );
    expect(window).toEqual(expectedHorizon(within, dateAt(start).getTime(), dateAt(end)));
    expectContractValid(window);
  });

  it('never spans more than MAX_HORIZON_WINDOW_S', () => {
    // Prepare
    const tracker = new HorizonTracker({ horizonS: MAX_HORIZON_WINDOW_S });
    for (let s = 0; s < 5000; s += 10) tracker.add(at(s, { gpu_util: 1 }));
    // Act
    const window = tracker.window(GPU, dateAt(5000));
    // Assess
    expect((Date.parse(window!.end) - Date.parse(window!.start)) / 1000).toBe(MAX_HORIZON_WINDOW_S);
  });

  it('starts again when a GPU clock steps back', () => {
    // Prepare
    const tracker = new HorizonTracker();
    for (let s = 100; s < 110; s++) tracker.add(at(s, { gpu_util: 1 }));
    // Act
    tracker.add(at(50, { gpu_util: 0 }));
    // Assess
    expect(tracker.sampleCount(0)).toBe(1);
    expect(tracker.window(GPU, dateAt(51))?.metrics).toEqual({ gpu_util: 0 });
  });

  it('lists and clears GPUs independently', () => {
    // Prepare
    const tracker = new HorizonTracker();
    for (const gpu of [3, 0, 7]) tracker.add(at(0, { gpu_util: 0.5 }, gpu));
    // Act
    tracker.clear(3);
    tracker.clear(42);
    // Assess
    expect(tracker.gpus()).toEqual([0, 7]);
    expect(tracker.sampleCount(3)).toBe(0);
    expect(tracker.window({ index: 3 }, dateAt(1))).toBeUndefined();
    expect(tracker.window({ index: 7 }, dateAt(1))?.metrics).toEqual({ gpu_util: 0.5 });
  });

  it.each([
    { options: { horizonS: 0 }, option: 'horizonS' },
    { options: { horizonS: 3601 }, option: 'horizonS' },
    { options: { horizonS: Number.NaN }, option: 'horizonS' },
    { options: { horizonS: '900' as unknown as number }, option: 'horizonS' },
    { options: { maxSamplesPerGpu: 1 }, option: 'maxSamplesPerGpu' },
    { options: { maxSamplesPerGpu: 10.5 }, option: 'maxSamplesPerGpu' },
    { options: { maxSamplesPerGpu: 1e9 }, option: 'maxSamplesPerGpu' },
    { options: { sampleIntervalMs: 0 }, option: 'sampleIntervalMs' },
    { options: { sampleIntervalMs: Number.POSITIVE_INFINITY }, option: 'sampleIntervalMs' },
  ])('throws WindowOptionsError naming $option for $options', ({ options, option }) => {
    // Prepare / Act / Assess
    expect(() => new HorizonTracker(options)).toThrow(
      expect.objectContaining({
        name: 'WindowOptionsError',
        option,
        message: expect.stringMatching(/^Expected `/),
      }),
    );
    expect(() => new HorizonTracker(options)).toThrow(WindowOptionsError);
  });

  it('takes the documented defaults', () => {
    // Prepare / Act
    const tracker = new HorizonTracker();
    // Assess
    expect([tracker.horizonS, tracker.maxSamplesPerGpu]).toEqual([900, 1801]);
  });

  it.each([
    { case: 'a GPU index above 63', sample: { gpu_index: 64, at_ms: 0 } },
    { case: 'a negative GPU index', sample: { gpu_index: -1, at_ms: 0 } },
    { case: 'a fractional GPU index', sample: { gpu_index: 1.5, at_ms: 0 } },
    { case: 'a time that is not finite', sample: { gpu_index: 0, at_ms: Number.NaN } },
  ])('throws WindowAggregationError when adding a sample with $case', ({ sample }) => {
    // Prepare
    const tracker = new HorizonTracker();
    // Act / Assess
    expect(() => tracker.add(sample)).toThrow(WindowAggregationError);
  });

  it('throws WindowAggregationError for an invalid end date', () => {
    // Prepare
    const tracker = new HorizonTracker();
    tracker.add(at(0));
    // Act / Assess
    expect(() => tracker.window(GPU, new Date(Number.NaN))).toThrow(WindowAggregationError);
  });

  it('equals aggregateWindow over the samples it keeps, for any arrival pattern', () => {
    // Prepare
    const arrival = fc.record({
      stepMs: fc.integer({ min: 0, max: 4000 }),
      fields: fc.record(
        {
          gpu_util: fc.double({ min: 0, max: 1, noNaN: true }),
          sm_active: fc.double({ min: 0, max: 1.1, noNaN: true }),
          fb_used_bytes: fc.nat(2 ** 40),
          pcie_rx_bytes_total: fc.nat(2 ** 40),
          clocks_event_reasons: fc.nat(0xff),
          processes: fc.array(fc.record({ pid: fc.nat(20), fb_used_bytes: fc.nat(1e9) }), { maxLength: 70 }),
        },
        { requiredKeys: [] },
      ),
    });
    // Act / Assess
    fc.assert(
      fc.property(
        fc.array(arrival, { minLength: 1, maxLength: 80 }),
        fc.integer({ min: 2, max: 30 }),
        (arrivals, maxSamplesPerGpu) => {
          const tracker = new HorizonTracker({ horizonS: 20, maxSamplesPerGpu });
          let atMs = START.getTime();
          const samples = arrivals.map(({ stepMs, fields }) => {
            atMs += stepMs;
            return { gpu_index: 0, at_ms: atMs, ...fields };
          });
          for (const sample of samples) tracker.add(sample);
          const end = new Date(atMs + 1);
          const kept = samples.slice(-maxSamplesPerGpu).filter((s) => s.at_ms >= end.getTime() - 20_000);
          const window = tracker.window(GPU, end);
          expect(window).toEqual(
            expectedHorizon(kept, Math.max(kept[0]!.at_ms, end.getTime() - 20_000), end),
          );
          expectContractValid(window);
        },
      ),
      { numRuns: 300 },
    );
  });
});
