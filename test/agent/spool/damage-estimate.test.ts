import { describe, expect, it } from 'vitest';
import { estimateLoss } from '../../../agent/spool/damage-estimate';
import { MIN_RECORD_BYTES, RECORD_HEADER_BYTES } from '../../../agent/spool/segment-format';
import { BatchSchema } from '../../../lambdas/contract';

const rec = (seq: number, bytes = 6000) => ({ seq, windows: 8, bytes });

describe('estimateLoss', () => {
  it.each([
    {
      case: 'between known neighbours: exactly the seqs between them',
      args: [6000, rec(4), rec(7)],
      seqs: [5, 6],
      windows: 16,
      ceiling: 6,
    },
    {
      case: 'after a known record only: by size, seqs above it',
      args: [12_100, rec(4)],
      seqs: [5, 6],
      windows: 16,
      ceiling: 4 + Math.ceil(12_100 / MIN_RECORD_BYTES),
    },
    {
      case: 'before a known record only: by size, seqs unknown',
      args: [6000, undefined, rec(9)],
      seqs: [-1],
      windows: 8,
      ceiling: undefined,
    },
    {
      case: 'with no neighbour: one batch, no windows known',
      args: [50],
      seqs: [-1],
      windows: 0,
      ceiling: undefined,
    },
  ])('counts a damaged region $case', ({ args, seqs, windows, ceiling }) => {
    // Act
    const loss = estimateLoss(...(args as Parameters<typeof estimateLoss>));

    // Assess
    expect(loss.batches.map((b) => b.seq)).toEqual(seqs);
    expect(loss.batches.reduce((sum, b) => sum + b.windows, 0)).toBe(windows);
    expect(loss.seqCeiling).toBe(ceiling);
  });

  it('bounds the smallest record a valid batch can make from below', () => {
    // Prepare: the shortest contract batch there is
    const smallest = {
      schema: 'gpu-sentinel/v1',
      batch_id: '00000000-0000-4000-8000-000000000000',
      seq: 0,
      sent_at: '2026-01-01T00:00:00Z',
      host: { instance_id: 'i-01234567', instance_type: 'g5.xlarge', region: 'us-east-1' },
      agent: { version: '1', profiling_source: 'none' },
      windows: [],
    };

    // Act
    const bytes = RECORD_HEADER_BYTES + Buffer.byteLength(JSON.stringify(smallest));

    // Assess
    expect(BatchSchema.safeParse(smallest).success).toBe(true);
    expect(bytes).toBeGreaterThanOrEqual(MIN_RECORD_BYTES);
  });
});
