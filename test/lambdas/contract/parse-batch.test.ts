import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  ContractValidationError,
  MAX_EVENTS_PER_BATCH,
  MAX_WINDOWS_PER_BATCH,
  parseBatch,
} from '../../../lambdas/contract';
import { ago, NOW, validBatch } from './batches';

// biome-ignore lint/suspicious/noExplicitAny: the tests mutate arbitrary JSON
type Loose = Record<string, any>;
type Mutation = (b: Loose) => void;

function refused(mutate: Mutation): ContractValidationError {
  const input = structuredClone(validBatch()) as Loose;
  mutate(input);
  try {
    parseBatch(input, NOW);
  } catch (err) {
    if (err instanceof ContractValidationError) return err;
    throw err;
  }
  throw new Error('expected the batch to be refused');
}

describe('parseBatch', () => {
  it('accepts a valid p5 batch and returns it typed', () => {
    // Prepare
    const input = validBatch();
    // Act
    const batch = parseBatch(structuredClone(input), NOW);
    // Assess
    expect(batch).toEqual(input);
  });

  it.each<[string, Mutation, string, RegExp]>([
    [
      'unknown schema version',
      (b) => (b.schema = 'gpu-sentinel/v2'),
      'schema',
      /unknown schema version "gpu-sentinel\/v2"/,
    ],
    ['missing schema', (b) => delete b.schema, 'schema', /gpu-sentinel\/v1/],
    ['batch_id not a uuid', (b) => (b.batch_id = 'nope'), 'batch_id', /UUID/i],
    ['negative seq', (b) => (b.seq = -1), 'seq', />=0/],
    ['fractional seq', (b) => (b.seq = 1.5), 'seq', /int/i],
    ['seq as string', (b) => (b.seq = '5'), 'seq', /expected number/],
    ['bad instance id', (b) => (b.host.instance_id = 'i-xyz'), 'host.instance_id', /EC2 instance id/],
    ['bad instance type', (b) => (b.host.instance_type = 'P5 48XL'), 'host.instance_type', /instance type/],
    ['bad region', (b) => (b.host.region = 'mars-1'), 'host.region', /region/],
    ['unknown host field', (b) => (b.host.owner = 'me'), 'host.owner', /unknown field "owner"/],
    [
      'unknown profiling source',
      (b) => (b.agent.profiling_source = 'nsight'),
      'agent.profiling_source',
      /gpm/,
    ],
    ['negative agent counter', (b) => (b.agent.stats.dropped = -3), 'agent.stats.dropped', />=0/],
    ['NaN metric', (b) => (b.windows[0].metrics.gpu_util = Number.NaN), 'windows[0].metrics.gpu_util', /NaN/],
    [
      'Infinity metric',
      (b) => (b.windows[2].metrics.power_w = Number.POSITIVE_INFINITY),
      'windows[2].metrics.power_w',
      /Infinity|number/,
    ],
    ['ratio above 1', (b) => (b.windows[0].metrics.sm_active = 1.2), 'windows[0].metrics.sm_active', /<=1/],
    ['ratio below 0', (b) => (b.windows[0].metrics.gpu_util = -0.1), 'windows[0].metrics.gpu_util', />=0/],
    [
      'percent instead of ratio',
      (b) => (b.windows[1].metrics.gpu_util = 97),
      'windows[1].metrics.gpu_util',
      /<=1/,
    ],
    [
      'negative counter',
      (b) => (b.windows[0].metrics.ecc_dbe_volatile = -1),
      'windows[0].metrics.ecc_dbe_volatile',
      />=0/,
    ],
    [
      'negative counter growth (a reset is absent, never negative)',
      (b) => (b.windows[0].metrics.nvlink_crc_errors_delta = -3),
      'windows[0].metrics.nvlink_crc_errors_delta',
      />=0/,
    ],
    [
      'fractional counter growth',
      (b) => (b.windows[0].metrics.ecc_sbe_volatile_delta = 1.5),
      'windows[0].metrics.ecc_sbe_volatile_delta',
      /int/i,
    ],
    [
      'fractional counter',
      (b) => (b.windows[0].metrics.pcie_replay_count = 0.5),
      'windows[0].metrics.pcie_replay_count',
      /int/i,
    ],
    [
      'fb used above total',
      (b) => (b.windows[0].metrics.fb_used_bytes = 9e10),
      'windows[0].metrics.fb_used_bytes',
      /fb_total_bytes/,
    ],
    [
      'unknown metric',
      (b) => (b.windows[0].metrics.sm_util = 0.5),
      'windows[0].metrics.sm_util',
      /unknown field "sm_util"/,
    ],
    [
      'temperature out of range',
      (b) => (b.windows[0].metrics.gpu_temp_c = 400),
      'windows[0].metrics.gpu_temp_c',
      /<=150/,
    ],
    ['window end before start', (b) => (b.windows[0].end = ago(20)), 'windows[0].end', /after start/],
    ['window kind unknown', (b) => (b.windows[0].kind = 'daily'), 'windows[0].kind', /flush/],
    ['flush window too long', (b) => (b.windows[0].start = ago(7200)), 'windows[0].end', /at most 3600 s/],
    ['gpu index out of range', (b) => (b.windows[0].gpu.index = 64), 'windows[0].gpu.index', /<=63/],
    ['time too old', (b) => (b.windows[3].start = ago(8 * 86400)), 'windows[3].start', /in the past/],
    ['time in the future', (b) => (b.sent_at = ago(-600)), 'sent_at', /in the future/],
    ['time without offset', (b) => (b.sent_at = '2026-11-21 10:00:00'), 'sent_at', /datetime|ISO/i],
    ['event kind unknown', (b) => (b.events[0].kind = 'meteor'), 'events[0].kind', /xid/],
    ['xid event without code', (b) => delete b.events[0].xid, 'events[0].xid', /expected xid/],
    ['xid out of range', (b) => (b.events[0].xid = 5000), 'events[0].xid', /<=999/],
    ['detail too long', (b) => (b.events[0].detail = 'x'.repeat(2000)), 'events[0].detail', /<=1024/],
    [
      'efa negative delta',
      (b) =>
        (b.efa = [{ start: ago(10), end: ago(0), device: 'rdmap16s27', port: 1, deltas: { rx_drops: -2 } }]),
      'efa[0].deltas.rx_drops',
      />=0/,
    ],
    [
      'too many windows',
      (b) => (b.windows = Array.from({ length: MAX_WINDOWS_PER_BATCH + 1 }, () => b.windows[0])),
      'windows',
      /<=512/,
    ],
    [
      'too many events',
      (b) => (b.events = Array.from({ length: MAX_EVENTS_PER_BATCH + 1 }, () => b.events[0])),
      'events',
      /<=256/,
    ],
    [
      'GPU instance id out of range',
      (b) => Object.assign(b.windows[0], { gpu_instance_id: 64, gpu_instance_profile: '1g.10gb' }),
      'windows[0].gpu_instance_id',
      /<=63/,
    ],
    [
      'GPU instance profile not a MIG profile',
      (b) => Object.assign(b.windows[0], { gpu_instance_id: 7, gpu_instance_profile: 'full' }),
      'windows[0].gpu_instance_profile',
      /MIG GPU instance profile like 1g\.10gb/,
    ],
    [
      'GPU instance id without its profile',
      (b) => Object.assign(b.windows[0], { gpu_instance_id: 7 }),
      'windows[0].gpu_instance_profile',
      /expected gpu_instance_profile with gpu_instance_id/,
    ],
    [
      'GPU instance profile without its id',
      (b) => Object.assign(b.windows[0], { gpu_instance_profile: '1g.10gb' }),
      'windows[0].gpu_instance_id',
      /expected gpu_instance_id with gpu_instance_profile/,
    ],
    [
      'the same GPU instance twice',
      (b) => {
        Object.assign(b.windows[0], { gpu_instance_id: 7, gpu_instance_profile: '1g.10gb' });
        b.windows.push(structuredClone(b.windows[0]));
      },
      'windows[8].gpu_instance_id',
      /two flush windows .* GPU instance 7/,
    ],
    [
      'a whole-GPU window beside its GPU instances',
      (b) =>
        b.windows.push({
          ...structuredClone(b.windows[0]),
          gpu_instance_id: 7,
          gpu_instance_profile: '1g.10gb',
        }),
      'windows[8].gpu_instance_id',
      /a whole-GPU flush window starting .* and GPU instance windows/,
    ],
    [
      'GPU instances holding more compute slices than the GPU has',
      (b) => {
        Object.assign(b.windows[0], { gpu_instance_id: 1, gpu_instance_profile: '4g.40gb' });
        b.windows.push({ ...structuredClone(b.windows[0]), gpu_instance_id: 2 });
      },
      'windows[8].gpu_instance_profile',
      /instances of 8 compute slices .* a GPU has 7/,
    ],
    ['windows not an array', (b) => (b.windows = {}), 'windows', /array/],
  ])('refuses %s, naming the field', (_name, mutate, path, message) => {
    // Act
    const err = refused(mutate);
    // Assess
    expect(err.path).toBe(path);
    expect(err.message).toMatch(message);
  });

  it('accepts one window per MIG GPU instance of a GPU (several windows per GPU index), old agents without them too', () => {
    // Prepare: GPU 0 of an H100 split 3g + 3g + 1g (all 7 compute slices), flush and horizon
    const batch = structuredClone(validBatch()) as Loose;
    const whole = batch.windows[0];
    const slices = [
      [1, '3g.40gb'],
      [2, '3g.40gb'],
      [9, '1g.10gb'],
    ].map(([id, profile]) => ({
      ...structuredClone(whole),
      gpu_instance_id: id,
      gpu_instance_profile: profile,
    }));
    const horizons = slices.map((w) => ({ ...structuredClone(w), kind: 'horizon', start: ago(900) }));
    batch.windows.splice(0, 1, ...slices, ...horizons);
    // Act
    const parsed = parseBatch(batch, NOW);
    // Assess
    expect(parsed.windows.filter((w) => w.gpu.index === 0).map((w) => w.gpu_instance_id)).toEqual([
      1, 2, 9, 1, 2, 9,
    ]);
    expect(parsed.windows[2]?.gpu_instance_profile).toBe('1g.10gb');
    expect(parsed.windows[6]?.gpu_instance_id).toBeUndefined();
  });

  it('still accepts two whole-GPU windows of one GPU and start, as contract v1 always has', () => {
    // Prepare: a batch whose first window repeats (an agent's count split may repeat one)
    const batch = structuredClone(validBatch()) as Loose;
    batch.windows.push(structuredClone(batch.windows[0]));
    // Act
    const parsed = parseBatch(batch, NOW);
    // Assess
    expect(parsed.windows.filter((w) => w.gpu.index === 0 && w.kind === 'flush')).toHaveLength(2);
  });

  it('allows an A30 GPU at most 4 compute slices', () => {
    // Prepare
    const batch = structuredClone(validBatch()) as Loose;
    const a30 = { ...batch.windows[0], gpu: { index: 0, name: 'NVIDIA A30' } };
    batch.windows.splice(
      0,
      1,
      ...[1, 2].map((id) => ({
        ...structuredClone(a30),
        gpu_instance_id: id,
        gpu_instance_profile: '2g.12gb',
      })),
    );
    const tooMany = structuredClone(batch);
    tooMany.windows.push({ ...structuredClone(a30), gpu_instance_id: 3, gpu_instance_profile: '1g.6gb' });
    // Act / Assess
    expect(parseBatch(batch, NOW).windows).toHaveLength(9);
    expect(() => parseBatch(tooMany, NOW)).toThrow(/windows\[9\]\.gpu_instance_profile.*a GPU has 4/);
  });

  it.each<[string, unknown]>([
    ['null', null],
    ['an array', []],
    ['a string', 'batch'],
  ])('refuses a body that is %s', (_name, input) => {
    expect(() => parseBatch(input, NOW)).toThrow(ContractValidationError);
  });

  it('refuses more than 64 distinct GPUs', () => {
    // Prepare: 65 GPUs is within the windows limit but over the GPU limit
    const batch = validBatch({}, 64);
    batch.windows.push({ ...batch.windows[0]!, gpu: { index: 63 } });
    const tooMany = structuredClone(batch) as Loose;
    tooMany.windows[64].gpu.index = 64;
    // Act / Assess
    expect(() => parseBatch(tooMany, NOW)).toThrow(/windows\[64\]\.gpu\.index/);
  });

  it('accepts timestamps at the edges of the window of 7 days past and 5 minutes ahead', () => {
    // Prepare
    const batch = validBatch({ sent_at: ago(-299) });
    batch.events = [{ at: ago(7 * 86400 - 1), kind: 'agent_start', source: 'agent' }];
    // Act / Assess
    expect(parseBatch(batch, NOW).events).toHaveLength(1);
  });

  it('never throws anything but ContractValidationError, whatever JSON arrives (fuzz)', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        try {
          parseBatch(value, NOW);
        } catch (err) {
          return err instanceof ContractValidationError && err.path.length > 0;
        }
        return true;
      }),
      { numRuns: 500 },
    );
  });

  it('refuses any single field replaced by a wrong-typed value (fuzz)', () => {
    const base = validBatch();
    const leaves: string[][] = [];
    const walk = (v: unknown, path: string[]): void => {
      if (v !== null && typeof v === 'object') for (const [k, c] of Object.entries(v)) walk(c, [...path, k]);
      else leaves.push(path);
    };
    walk(base, []);
    fc.assert(
      fc.property(
        fc.constantFrom(...leaves),
        fc.constantFrom<unknown>({}, [], null, 'x'.repeat(2000), -1e300),
        (path, bad) => {
          const input = structuredClone(base) as Loose;
          let node = input;
          for (const key of path.slice(0, -1)) node = node[key];
          const last = path[path.length - 1]!;
          if (typeof node[last] === typeof bad && !Array.isArray(bad) && bad !== null) return true;
          node[last] = bad;
          expect(() => parseBatch(input, NOW)).toThrow(ContractValidationError);
          return true;
        },
      ),
      { numRuns: 300 },
    );
  });
});
