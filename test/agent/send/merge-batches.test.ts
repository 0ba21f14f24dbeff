import { describe, expect, it } from 'vitest';
import { MAX_MERGED_BATCHES, mergeableCount, mergeBatches } from '../../../agent/send/merge-batches';
import {
  type Batch,
  type EfaWindow,
  LEGACY_MAX_EFA_PORTS_PER_BATCH,
  MAX_EFA_PORTS_PER_BATCH,
  MAX_EVENTS_PER_BATCH,
  parseBatch,
} from '../../../lambdas/contract';
import { makeBatch, T0 } from '../spool/spool-fixtures';

/** Batch `seq` of one agent: `gpus` flush + horizon windows ending at T0 + seq × 10 s. */
function flushAt(seq: number, gpus = 2): Batch {
  return makeBatch(seq, new Date(T0.getTime() + seq * 10_000), gpus, true);
}

/** Batch `seq` of a p5: 8 GPU flush windows and its 32 EFA devices' 64 entries. */
function p5At(seq: number): Batch {
  const batch = flushAt(seq, 8);
  const end = batch.windows[0]?.end ?? batch.sent_at;
  const start = batch.windows[0]?.start ?? batch.sent_at;
  const efa: EfaWindow[] = Array.from({ length: 64 }, (_, i) => ({
    start,
    end,
    device: `rdmap${79 + (i >> 1)}s0`,
    port: i % 2,
    deltas: { tx_pkts: 1_664_737 },
  }));
  return { ...batch, efa };
}

describe('mergeBatches', () => {
  it('keeps every flush window and event in order, the newest horizon per GPU, and the newest envelope', () => {
    // Prepare
    const batches = [0, 1, 2].map((seq) => flushAt(seq));
    batches[1]!.events = [{ at: batches[1]!.sent_at, kind: 'xid', xid: 79, source: 'nvml', gpu_index: 1 }];
    batches[2]!.events = [{ at: batches[2]!.sent_at, kind: 'agent_stop', source: 'agent' }];

    // Act
    const merged = mergeBatches(batches);

    // Assess: valid against the contract, as the API parses it
    const parsed = parseBatch(JSON.parse(JSON.stringify(merged)), new Date(T0.getTime() + 60_000));
    expect(
      parsed.windows.map((w) => `${w.kind}:${w.gpu.index}@${(Date.parse(w.end) - T0.getTime()) / 1000}`),
    ).toEqual([
      'flush:0@0',
      'flush:1@0',
      'flush:0@10',
      'flush:1@10',
      'flush:0@20',
      'flush:1@20',
      'horizon:0@20',
      'horizon:1@20',
    ]);
    expect(parsed.events?.map((e) => e.kind)).toEqual(['xid', 'agent_stop']);
    expect([parsed.seq, parsed.batch_id, parsed.sent_at]).toEqual([
      batches[2]!.seq,
      batches[2]!.batch_id,
      batches[2]!.sent_at,
    ]);
  });

  it('returns a single batch as it is, and refuses an empty list', () => {
    const one = flushAt(0);
    expect(mergeBatches([one])).toBe(one);
    expect(() => mergeBatches([])).toThrow(RangeError);
  });
});

describe('mergeableCount', () => {
  it.each<{ name: string; batches: () => Batch[]; count: number }>([
    { name: 'nothing', batches: () => [], count: 0 },
    {
      name: 'six 8-GPU flushes (one minute)',
      batches: () => [0, 1, 2, 3, 4, 5].map((s) => flushAt(s, 8)),
      count: 6,
    },
    {
      name: '8-GPU flushes past 512 windows (8 × 63 flush + 8 horizon)',
      batches: () => Array.from({ length: 70 }, (_, s) => flushAt(s, 8)),
      count: 63,
    },
    {
      name: `more than ${MAX_MERGED_BATCHES} 1-GPU flushes`,
      batches: () => Array.from({ length: 100 }, (_, s) => flushAt(s, 1)),
      count: MAX_MERGED_BATCHES,
    },
    {
      name: 'a batch of another host',
      batches: () => {
        const other = flushAt(2);
        return [
          flushAt(0),
          flushAt(1),
          { ...other, host: { ...other.host, instance_id: 'i-0fff0000000000fff' } },
        ];
      },
      count: 2,
    },
    {
      name: 'events past 256',
      batches: () =>
        [0, 1].map((seq) => ({
          ...flushAt(seq),
          events: Array.from({ length: MAX_EVENTS_PER_BATCH / 2 + 1 }, () => ({
            at: T0.toISOString(),
            kind: 'agent_start' as const,
            source: 'agent' as const,
          })),
        })),
      count: 1,
    },
  ])('allows $count of $name in one request', ({ batches, count }) => {
    expect(mergeableCount(batches())).toBe(count);
  });

  it.each([
    { limit: MAX_EFA_PORTS_PER_BATCH, count: 63 }, // 512 windows bind first: 8 × 63 flush + 8 horizon
    { limit: 384, count: 6 },
    { limit: LEGACY_MAX_EFA_PORTS_PER_BATCH, count: 1 },
  ])('merges $count p5 flushes (64 EFA entries each) within $limit EFA entries', ({ limit, count }) => {
    // Prepare
    const batches = Array.from({ length: 70 }, (_, s) => p5At(s));

    // Act
    const n = mergeableCount(batches, limit);

    // Assess: the merged batch is valid against the contract
    expect(n).toBe(count);
    const merged = mergeBatches(batches.slice(0, n));
    expect(merged.efa).toHaveLength(64 * count);
    expect(() =>
      parseBatch(JSON.parse(JSON.stringify(merged)), new Date(T0.getTime() + 3600_000)),
    ).not.toThrow();
  });
});
