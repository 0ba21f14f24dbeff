import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, judgeWindows, priceFor } from '../../../../lambdas/domain';
import { NOW } from '../batch-builder';
import { COMPUTE_BOUND, horizon, horizonBatch, IDLE_HORIZON } from './horizons';

const price = priceFor('p5.48xlarge', 'us-east-1');
const flush = (index: number) => ({
  ...horizon(index, IDLE_HORIZON, 60),
  kind: 'flush',
});

describe('judgeWindows diagnoses', () => {
  it('diagnoses and marks idle each MIG slice of a GPU on its own (keys 0/gi1, 0/gi2)', () => {
    // Prepare: GPU 0 split 3g + 4g; slice 1 computes, slice 2 idles
    const slice = (w: Record<string, unknown>, id: number, profile: string) => ({
      ...w,
      gpu_instance_id: id,
      gpu_instance_profile: profile,
    });
    const batch = horizonBatch(
      [slice(horizon(0, COMPUTE_BOUND), 1, '3g.40gb'), slice(horizon(0, IDLE_HORIZON), 2, '4g.40gb')],
      { flush: [slice(flush(0), 1, '3g.40gb'), slice(flush(0), 2, '4g.40gb')] },
    );

    // Act
    const { diagnoses, idle } = judgeWindows(batch, DEFAULT_RULE_CONTEXT, price, new Map(), NOW);

    // Assess
    expect([...diagnoses]).toEqual([
      ['0/gi1', 'compute_bound'],
      ['0/gi2', 'idle'],
    ]);
    expect([...idle.mark.keys()]).toEqual(['0/gi2']);
  });

  it('bills the idle slice alone, naming it 0/gi2, once it has been idle 30 minutes', () => {
    // Prepare: slice 2 idle since an hour ago (stored mark), slice 1 computing
    const slice = (w: Record<string, unknown>, id: number, profile: string) => ({
      ...w,
      gpu_instance_id: id,
      gpu_instance_profile: profile,
    });
    const batch = horizonBatch([
      slice(horizon(0, COMPUTE_BOUND), 1, '3g.40gb'),
      slice(horizon(0, IDLE_HORIZON), 2, '4g.40gb'),
    ]);
    const since = new Date(NOW.getTime() - 3600_000).toISOString();

    // Act
    const { findings } = judgeWindows(batch, DEFAULT_RULE_CONTEXT, price, new Map([['0/gi2', since]]), NOW);

    // Assess
    const billed = findings.find((f) => f.rule === 'idle_billed');
    expect(billed?.evidence).toMatchObject({ gpus: '0/gi2', idle_since: `GPU0/gi2 ${since}` });
    expect(billed?.summary).toContain('on GPU 0/gi2');
  });

  it('names the first minutes of a GPU awaiting_diagnosis instead of leaving its waste under no cause', () => {
    // Prepare: GPU 0 has a judged 15-min horizon; GPU 1's horizon covers 2 min (under the 5-min minimum)
    const batch = horizonBatch([horizon(0, COMPUTE_BOUND), horizon(1, IDLE_HORIZON, 120)], {
      flush: [flush(0), flush(1)],
    });

    // Act
    const { diagnoses } = judgeWindows(batch, DEFAULT_RULE_CONTEXT, price, new Map(), NOW);

    // Assess
    expect([...diagnoses]).toEqual([
      ['0', 'compute_bound'],
      ['1', 'awaiting_diagnosis'],
    ]);
  });

  it('names no diagnosis for a GPU the batch has no flush window of', () => {
    // Prepare
    const batch = horizonBatch([horizon(0, IDLE_HORIZON, 120)]);

    // Act / Assess
    expect(judgeWindows(batch, DEFAULT_RULE_CONTEXT, price, new Map(), NOW).diagnoses.size).toBe(0);
  });
});
