import { describe, expect, it } from 'vitest';
import {
  DEFAULT_RULE_CONTEXT,
  DEFAULT_THRESHOLDS,
  idleBilledRule,
  judgedHorizons,
  nextIdleSince,
  priceFor,
} from '../../../../lambdas/domain';
import { NOW } from '../batch-builder';
import { COMPUTE_BOUND, horizon, horizonBatch, IDLE_HORIZON, inputFor } from './horizons';

const price = priceFor('p5.48xlarge', 'us-east-1');

describe('nextIdleSince', () => {
  it.each([
    [
      'marks a GPU idle since its horizon start',
      new Map(),
      IDLE_HORIZON,
      { mark: [['0', '2026-03-10T09:45:10.000Z']], clear: [] },
    ],
    [
      'keeps an earlier mark',
      new Map([['0', '2026-03-10T09:20:00.000Z']]),
      IDLE_HORIZON,
      { mark: [], clear: [] },
    ],
    [
      'clears a GPU that works again',
      new Map([['0', '2026-03-10T09:20:00.000Z']]),
      COMPUTE_BOUND,
      { mark: [], clear: ['0'] },
    ],
    [
      'does not mark a GPU held by a process',
      new Map(),
      { ...IDLE_HORIZON, compute_processes: 1 },
      { mark: [], clear: [] },
    ],
    [
      'does not mark a GPU with an unknown process count and framebuffer, alone on its host',
      new Map(),
      { ...IDLE_HORIZON, compute_processes: undefined, fb_used_bytes: undefined },
      { mark: [], clear: [] },
    ],
    [
      'does not mark a GPU busy for a moment in the horizon',
      new Map(),
      { ...IDLE_HORIZON, sm_active: 0.002, max_sm_active: 0.4 },
      { mark: [], clear: [] },
    ],
  ])('%s', (_case, previous, metrics, expected) => {
    // Prepare
    const { gpus } = judgedHorizons(horizonBatch([horizon(0, metrics)]), DEFAULT_THRESHOLDS, price);

    // Act
    const update = nextIdleSince(previous, gpus, DEFAULT_THRESHOLDS);

    // Assess
    expect({ mark: [...update.mark], clear: update.clear }).toEqual(expected);
  });

  it.each([
    ['its horizon', true],
    ['its flush window only', false],
  ])(
    'does not mark a GPU a Kubernetes pod holds, the pod named on %s: it is held idle',
    (_case, onHorizon) => {
      // Prepare
      const k8s = { namespace: 'ml-train', pod: 'llama-7b-0' };
      const h = horizon(0, IDLE_HORIZON);
      const flush = { ...h, kind: 'flush', start: '2026-03-10T10:00:00.000Z', ...(onHorizon ? {} : { k8s }) };
      const batch = horizonBatch([onHorizon ? { ...h, k8s } : h, flush]);
      const { gpus } = judgedHorizons(batch, DEFAULT_THRESHOLDS, price);

      // Act
      const update = nextIdleSince(new Map(), gpus, DEFAULT_THRESHOLDS);

      // Assess
      expect(gpus.map((g) => g.diagnosis)).toEqual(['held_idle']);
      expect([...update.mark]).toEqual([]);
    },
  );

  it.each([
    ['a few MiB of framebuffer used (no context)', 4 * 2 ** 20, 'idle', true],
    ['40 GiB of framebuffer used (a model loaded)', 40 * 2 ** 30, 'held_idle', false],
  ])(
    'decides from the framebuffer where processes are unknown (dcgm-exporter): %s',
    (_case, fb, diagnosis, marked) => {
      // Prepare
      const batch = horizonBatch([
        horizon(0, { ...IDLE_HORIZON, compute_processes: undefined, fb_used_bytes: fb }),
      ]);
      const { gpus } = judgedHorizons(batch, DEFAULT_THRESHOLDS, price);

      // Act
      const update = nextIdleSince(new Map(), gpus, DEFAULT_THRESHOLDS);

      // Assess
      expect(gpus.map((g) => g.diagnosis)).toEqual([diagnosis]);
      expect(update.mark.size > 0).toBe(marked);
    },
  );

  it('marks an unlabelled GPU of a host whose exporter maps pods (no process count, no framebuffer) idle', () => {
    // Prepare: the real EKS p5 scrape's shape: GPU 0 named by a pod, GPU 1 by none, neither with processes nor FB
    const unknown = { ...IDLE_HORIZON, compute_processes: undefined, fb_used_bytes: undefined };
    const k8s = { namespace: 'dynamo-workload', pod: 'vllm-agg-0-vllmdecodeworker-s65j5' };
    const batch = horizonBatch([{ ...horizon(0, unknown), k8s }, horizon(1, unknown)]);
    const alone = horizonBatch([horizon(1, unknown)]);

    // Act
    const { gpus } = judgedHorizons(batch, DEFAULT_THRESHOLDS, price);
    const mapped = nextIdleSince(new Map(), gpus, DEFAULT_THRESHOLDS);
    const unmapped = nextIdleSince(
      new Map(),
      judgedHorizons(alone, DEFAULT_THRESHOLDS, price).gpus,
      DEFAULT_THRESHOLDS,
    );

    // Assess
    expect(gpus.map((g) => [g.diagnosis, g.free])).toEqual([
      ['held_idle', false],
      ['idle', true],
    ]);
    expect([...mapped.mark.keys()]).toEqual(['1']);
    expect([...unmapped.mark]).toEqual([]);
  });

  it('marks an idle A100 without profiling counters from GPU util', () => {
    // Prepare
    const noSm = Object.fromEntries(Object.entries(IDLE_HORIZON).filter(([k]) => !k.includes('sm_active')));
    const batch = horizonBatch([horizon(0, { ...noSm, gpu_util: 0 })], { profiling: 'none' });
    const { gpus } = judgedHorizons(batch, DEFAULT_THRESHOLDS, price);

    // Act
    const update = nextIdleSince(new Map(), gpus, DEFAULT_THRESHOLDS);

    // Assess
    expect([...update.mark]).toEqual([['0', '2026-03-10T09:45:10.000Z']]);
  });

  it('keeps the mark of a GPU with no judged horizon (absent is not busy)', () => {
    // Prepare
    const previous = new Map([['0', '2026-03-10T09:20:00.000Z']]);
    const { gpus } = judgedHorizons(
      horizonBatch([horizon(0, COMPUTE_BOUND, 120)]),
      DEFAULT_THRESHOLDS,
      price,
    );

    // Act
    const update = nextIdleSince(previous, gpus, DEFAULT_THRESHOLDS);

    // Assess
    expect([...update.since]).toEqual([...previous]);
    expect(update.clear).toEqual([]);
  });
});

describe('idle_billed', () => {
  it.each([
    ['stays silent idle 15 min (the horizon alone)', new Map<string, string>(), 0],
    ['stays silent idle 29 min', new Map([['0', '2026-03-10T09:31:30.000Z']]), 0],
    ['fires idle 30 min', new Map([['0', '2026-03-10T09:30:20.000Z']]), 1],
    ['fires idle 2 h', new Map([['0', '2026-03-10T08:00:00.000Z']]), 1],
  ])('%s', (_case, idle, n) => {
    // Prepare
    const input = inputFor(horizonBatch([horizon(0, IDLE_HORIZON)]), idle);

    // Act
    const verdict = idleBilledRule.evaluate(input, DEFAULT_RULE_CONTEXT, NOW);

    // Assess
    expect(verdict.judged).toBe(true);
    expect(verdict.findings).toHaveLength(n);
    if (n === 1)
      expect(verdict.findings[0]?.summary).toMatch(
        /on GPU 0: idle with no process for \d+ min while billed, costs \$6\.88\/h/,
      );
  });
});
