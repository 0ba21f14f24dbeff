import { describe, expect, it } from 'vitest';
import { MAX_MERGED_BATCHES, mergeableCount, mergeBatches } from '../../../agent/send/merge-batches';
import { type Batch, MAX_EVENTS_PER_BATCH, parseBatch } from '../../../lambdas/contract';
import { makeBatch, T0 } from '../spool/spool-fixtures';

/** Batch `seq` of one agent: `gpus` flush + horizon windows ending at T0 + seq × 10 s. */
function flushAt(seq: number, gpus = 2): Batch {
  return makeBatch(seq, new Date(T0.getTime() + seq * 10_000), gpus, true);
}

/** The 64 EFA entries of a p5.48xlarge flush `seq`: each of 32 devices' counters (port 0) and its port's (port 1). */
function p5Efa(seq: number): NonNullable<Batch['efa']> {
  const end = new Date(T0.getTime() + seq * 10_000);
  return Array.from({ length: 64 }, (_, i) => ({
    start: new Date(end.getTime() - 10_000).toISOString(),
    end: end.toISOString(),
    device: `rdmap${Math.floor(i / 2)}s0`,
    port: i % 2,
    deltas: { rx_bytes: 1_000_000 },
  }));
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
      name: 'p5.48xlarge flushes, 64 EFA entries each (32 devices × device and port counters)',
      batches: () => Array.from({ length: 8 }, (_, s) => ({ ...flushAt(s, 8), efa: p5Efa(s) })),
      count: 6,
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
});
