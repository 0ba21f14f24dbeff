import { describe, expect, it } from 'vitest';
import type { GpuMetrics } from '../../../../lambdas/contract';
import {
  DEFAULT_RULE_CONTEXT,
  evaluateWindowRules,
  type RuleId,
  WINDOW_RULES,
  type WindowRule,
} from '../../../../lambdas/domain';
import { NOW } from '../batch-builder';
import { COMPUTE_BOUND, fleet, type HorizonBatchOptions, horizon, horizonBatch, inputFor } from './horizons';

const with_ = (m: GpuMetrics): GpuMetrics => ({ ...COMPUTE_BOUND, ...m });
const without = (...keys: (keyof GpuMetrics)[]): GpuMetrics => {
  const m: Record<string, unknown> = { ...COMPUTE_BOUND };
  for (const k of keys) delete m[k];
  return m as GpuMetrics;
};
/** Eight healthy GPUs with GPU 3 replaced by `m`. */
const oneOf8 = (m: GpuMetrics, spanS = 900): Record<string, unknown>[] =>
  fleet(8, COMPUTE_BOUND, spanS).map((w, i) => (i === 3 ? horizon(3, m, spanS) : w));

const efaPort = (deltas: Record<string, number>, device = 'rdmap16s27') => ({
  start: '2026-03-10T10:00:00Z',
  end: '2026-03-10T10:00:10Z',
  device,
  port: 1,
  deltas: { rx_pkts: 1_000_000, tx_pkts: 1_000_000, ...deltas },
});

type Expected = 'fires' | 'silent' | 'not judged';

interface Case {
  readonly rule: RuleId;
  readonly case: string;
  readonly windows: Record<string, unknown>[];
  readonly opts?: HorizonBatchOptions;
  readonly expected: Expected;
  /** The GPUs the finding lists, when it fires on GPUs. */
  readonly gpus?: string;
}

const CASES: Case[] = [
  // fake_load
  {
    rule: 'fake_load',
    case: 'GPU util 100 %, SM active 2 %',
    windows: oneOf8(with_({ gpu_util: 1, sm_active: 0.02, max_sm_active: 0.05 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'fake_load',
    case: 'GPU util 100 %, SM active 85 %',
    windows: oneOf8(COMPUTE_BOUND),
    expected: 'silent',
  },
  {
    rule: 'fake_load',
    case: 'a horizon shorter than 5 min',
    windows: oneOf8(with_({ gpu_util: 1, sm_active: 0.02 }), 240),
    expected: 'not judged',
  },
  {
    rule: 'fake_load',
    case: 'SM active absent (no profiling): never zero',
    windows: fleet(2, without('sm_active', 'min_sm_active', 'max_sm_active', 'sm_active_cv')),
    expected: 'not judged',
  },
  // input_bound / cpu_bound
  {
    rule: 'input_bound',
    case: 'SM 15 %, PCIe RX 3 GB/s',
    windows: oneOf8(with_({ gpu_util: 0.6, sm_active: 0.15, pcie_rx_bytes_per_s: 3e9 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'input_bound',
    case: 'SM 15 %, PCIe RX bursts of 6 GB/s',
    windows: oneOf8(
      with_({ gpu_util: 0.6, sm_active: 0.15, pcie_rx_bytes_per_s: 3e8, max_pcie_rx_bytes_per_s: 6e9 }),
    ),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'input_bound',
    case: 'SM 15 %, PCIe RX low',
    windows: oneOf8(
      with_({ gpu_util: 0.6, sm_active: 0.15, pcie_rx_bytes_per_s: 1e7, max_pcie_rx_bytes_per_s: 2e7 }),
    ),
    expected: 'silent',
  },
  {
    rule: 'cpu_bound',
    case: 'SM 15 %, PCIe RX low',
    windows: oneOf8(
      with_({ gpu_util: 0.6, sm_active: 0.15, pcie_rx_bytes_per_s: 1e7, max_pcie_rx_bytes_per_s: 2e7 }),
    ),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'cpu_bound',
    case: 'SM 15 %, PCIe RX absent: not guessed as low',
    windows: [
      horizon(0, {
        ...without('pcie_rx_bytes_per_s', 'max_pcie_rx_bytes_per_s'),
        gpu_util: 0.6,
        sm_active: 0.15,
      }),
    ],
    expected: 'not judged',
  },
  // low_occupancy / tensor_idle / memory_bound
  {
    rule: 'low_occupancy',
    case: 'SM 80 %, occupancy 10 %',
    windows: oneOf8(with_({ sm_occupancy: 0.1 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'low_occupancy',
    case: 'occupancy absent',
    windows: oneOf8(without('sm_occupancy')),
    expected: 'silent',
  },
  {
    rule: 'tensor_idle',
    case: 'SM 50 %, tensor 1 %',
    windows: oneOf8(with_({ sm_active: 0.5, tensor_active: 0.01 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'tensor_idle',
    case: 'SM 85 % (compute bound), tensor 1 %',
    windows: oneOf8(with_({ tensor_active: 0.01 })),
    expected: 'silent',
  },
  {
    rule: 'tensor_idle',
    case: 'tensor active absent',
    windows: oneOf8(without('tensor_active')),
    expected: 'silent',
  },
  {
    rule: 'memory_bound',
    case: 'SM high, DRAM 90 %',
    windows: oneOf8(with_({ dram_active: 0.9 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'memory_bound',
    case: 'SM low, DRAM 85 %',
    windows: oneOf8(with_({ sm_active: 0.2, gpu_util: 0.5, dram_active: 0.85 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'memory_bound',
    case: 'DRAM 79 %',
    windows: oneOf8(with_({ dram_active: 0.79 })),
    expected: 'silent',
  },
  // power_sawtooth
  {
    rule: 'power_sawtooth',
    case: 'power and SM swinging together',
    windows: oneOf8(with_({ sm_active: 0.5, tensor_active: 0.3, power_cv: 0.4, sm_active_cv: 0.8 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'power_sawtooth',
    case: 'steady power',
    windows: oneOf8(with_({ power_cv: 0.05, sm_active_cv: 0.8 })),
    expected: 'silent',
  },
  {
    rule: 'power_sawtooth',
    case: 'power spread absent',
    windows: fleet(2, without('power_cv')),
    expected: 'not judged',
  },
  // memory_pressure
  {
    rule: 'memory_pressure',
    case: 'framebuffer 97 % full',
    windows: oneOf8(with_({ fb_used_bytes: 77.6e9 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'memory_pressure',
    case: 'a leak filling 40 GB in ~11 min',
    windows: oneOf8(with_({ fb_used_growth_bytes_per_s: 6e7 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'memory_pressure',
    case: 'a slow drift (full in 11 h)',
    windows: oneOf8(with_({ fb_used_growth_bytes_per_s: 1e6 })),
    expected: 'silent',
  },
  {
    rule: 'memory_pressure',
    case: 'memory absent',
    windows: fleet(2, without('fb_used_bytes', 'fb_total_bytes', 'fb_used_growth_bytes_per_s')),
    expected: 'not judged',
  },
  // thermal_throttle
  {
    rule: 'thermal_throttle',
    case: 'throttled 30 % of the horizon',
    windows: oneOf8(with_({ thermal_throttle_ratio: 0.3 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'thermal_throttle',
    case: 'peak 87 C',
    windows: oneOf8(with_({ max_gpu_temp_c: 87, gpu_temp_c: 78 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'thermal_throttle',
    case: 'running at 82 C on average',
    windows: oneOf8(with_({ gpu_temp_c: 82, max_gpu_temp_c: 84 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'thermal_throttle',
    case: '70 C, no throttle reasons',
    windows: oneOf8(COMPUTE_BOUND),
    expected: 'silent',
  },
  // power_throttle
  {
    rule: 'power_throttle',
    case: 'held down by the power cap 30 % of the horizon',
    windows: oneOf8(with_({ power_throttle_ratio: 0.3, power_w: 700, power_limit_w: 700 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'power_throttle',
    case: 'capped 10 % of the horizon (below 20 %)',
    windows: oneOf8(with_({ power_throttle_ratio: 0.1 })),
    expected: 'silent',
  },
  {
    rule: 'power_throttle',
    case: 'power throttle ratio absent',
    windows: fleet(2, without('power_throttle_ratio')),
    expected: 'not judged',
  },
  // health rates
  {
    rule: 'pcie_replay_rate',
    case: '300 replays in 15 min',
    windows: oneOf8(with_({ pcie_replay_delta: 300, pcie_replay_count: 900 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'pcie_replay_rate',
    case: 'a high end value with no growth',
    windows: oneOf8(with_({ pcie_replay_delta: 0, pcie_replay_count: 900_000 })),
    expected: 'silent',
  },
  {
    rule: 'pcie_replay_rate',
    case: 'after a counter reset (growth absent)',
    windows: fleet(2, without('pcie_replay_delta')),
    expected: 'not judged',
  },
  {
    rule: 'nvlink_crc_rate',
    case: '45 CRC errors in 15 min',
    windows: oneOf8(with_({ nvlink_crc_errors_delta: 45, nvlink_crc_errors: 45 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'nvlink_crc_rate',
    case: '5 CRC errors in 15 min',
    windows: oneOf8(with_({ nvlink_crc_errors_delta: 5 })),
    expected: 'silent',
  },
  {
    rule: 'ecc_sbe_rate',
    case: '60 corrected errors in 15 min',
    windows: oneOf8(with_({ ecc_sbe_volatile_delta: 60, ecc_sbe_volatile: 61 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'ecc_sbe_rate',
    case: 'after a counter reset (growth absent)',
    windows: fleet(2, without('ecc_sbe_volatile_delta')),
    expected: 'not judged',
  },
  // straggler
  {
    rule: 'straggler',
    case: 'GPU 3 at 60 % SM, peers at 85 %',
    windows: oneOf8(with_({ sm_active: 0.6, power_w: 450, gpu_temp_c: 55 })),
    expected: 'fires',
    gpus: '3',
  },
  {
    rule: 'straggler',
    case: 'peers within noise',
    windows: Array.from({ length: 8 }, (_, i) => horizon(i, with_({ sm_active: 0.84 + i * 0.002 }))),
    expected: 'silent',
  },
  {
    rule: 'straggler',
    case: 'one GPU 5 % lower (under the 10 % gap)',
    windows: oneOf8(with_({ sm_active: 0.81 })),
    expected: 'silent',
  },
  { rule: 'straggler', case: 'a single GPU', windows: fleet(1, COMPUTE_BOUND), expected: 'not judged' },
  {
    rule: 'straggler',
    case: 'two GPUs',
    windows: [horizon(0, COMPUTE_BOUND), horizon(1, with_({ sm_active: 0.3 }))],
    expected: 'not judged',
  },
  {
    rule: 'straggler',
    case: 'no SM active: cooler and lower power',
    windows: Array.from({ length: 8 }, (_, i) =>
      horizon(i, { ...without('sm_active'), ...(i === 3 ? { power_w: 300, gpu_temp_c: 45 } : {}) }),
    ),
    expected: 'fires',
    gpus: '3',
  },
  // waste_rate
  {
    rule: 'waste_rate',
    case: 'eight idle GPUs',
    windows: fleet(8, with_({ gpu_util: 0, sm_active: 0, max_sm_active: 0, compute_processes: 0 })),
    expected: 'fires',
  },
  {
    rule: 'waste_rate',
    case: 'eight compute-bound GPUs (15 % waste)',
    windows: fleet(8, COMPUTE_BOUND),
    expected: 'silent',
  },
  {
    rule: 'waste_rate',
    case: 'an unpriced instance',
    windows: fleet(1, with_({ sm_active: 0 })),
    opts: { host: { instance_id: 'i-0abc12345def67890', instance_type: 'x9.metal', region: 'us-east-1' } },
    expected: 'not judged',
  },
  // profiling_unavailable
  {
    rule: 'profiling_unavailable',
    case: 'an A100 host with no profiling source',
    windows: fleet(
      8,
      without(
        'sm_active',
        'min_sm_active',
        'max_sm_active',
        'sm_active_cv',
        'sm_occupancy',
        'tensor_active',
        'dram_active',
      ),
    ),
    opts: { profiling: 'none' },
    expected: 'fires',
  },
  {
    rule: 'profiling_unavailable',
    case: 'a host with GPM',
    windows: fleet(8, COMPUTE_BOUND),
    expected: 'silent',
  },
  // efa_drops
  {
    rule: 'efa_drops',
    case: 'rx_drops rising on one port',
    windows: fleet(8, COMPUTE_BOUND),
    opts: { efa: [efaPort({ rx_drops: 0 }, 'rdmap16s27'), efaPort({ rx_drops: 120 }, 'rdmap32s27')] },
    expected: 'fires',
  },
  {
    rule: 'efa_drops',
    case: 'an unresponsive remote',
    windows: fleet(8, COMPUTE_BOUND),
    opts: { efa: [efaPort({ unresponsive_remote_events: 2 })] },
    expected: 'fires',
  },
  {
    rule: 'efa_drops',
    case: 'retransmitting 2 % of what it sends',
    windows: fleet(8, COMPUTE_BOUND),
    opts: { efa: [efaPort({ retrans_pkts: 20_000 })] },
    expected: 'fires',
  },
  {
    rule: 'efa_drops',
    case: 'clean counters',
    windows: fleet(8, COMPUTE_BOUND),
    opts: { efa: [efaPort({ rx_drops: 0, retrans_pkts: 10, retrans_timeout_events: 0 })] },
    expected: 'silent',
  },
  {
    rule: 'efa_drops',
    case: 'no EFA in the batch',
    windows: fleet(8, COMPUTE_BOUND),
    expected: 'not judged',
  },
];

describe('window rules', () => {
  it.each(CASES)('$rule: $case → $expected', ({ rule, windows, opts, expected, gpus }) => {
    // Prepare
    const input = inputFor(horizonBatch(windows, opts));

    // Act
    const { findings, judged } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW);

    // Assess
    const mine = findings.filter((f) => f.rule === rule);
    expect(judged.has(rule)).toBe(expected !== 'not judged');
    expect(mine).toHaveLength(expected === 'fires' ? 1 : 0);
    if (expected === 'fires') {
      expect(mine[0]?.severity).not.toBe('critical');
      expect(mine[0]?.action).toBe('notify');
      expect(mine[0]?.gpu_index).toBeUndefined();
      if (gpus !== undefined) expect(mine[0]?.evidence.gpus).toBe(gpus);
    }
  });

  it('prices thermal throttling: the GPU price share × the throttled fraction of the horizon', () => {
    // Prepare: one p5 GPU ($55.04 / 8 an hour) throttled for heat in 30 % of its samples
    const input = inputFor(horizonBatch(oneOf8(with_({ thermal_throttle_ratio: 0.3 }))));

    // Act
    const [finding] = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW).findings.filter(
      (f) => f.rule === 'thermal_throttle',
    );

    // Assess
    expect(finding?.evidence.throttled_usd_per_hour).toBeCloseTo((55.04 / 8) * 0.3, 3);
    expect(finding?.summary).toContain('$2.06/h of GPU time throttled');
  });

  it.each([
    { case: 'the SW power cap', reasons: 0x4, severity: 'info', what: 'held down by the power cap' },
    {
      case: 'the HW power brake',
      reasons: 0x88,
      severity: 'warning',
      what: 'cut by the hardware power brake',
    },
  ])(
    'prices power throttling from $case: the GPU price share × the capped fraction',
    ({ reasons, severity, what }) => {
      // Prepare: one p5 GPU ($55.04 / 8 an hour) held down by power in 40 % of the horizon
      const input = inputFor(
        horizonBatch(
          oneOf8(with_({ power_throttle_ratio: 0.4, clocks_event_reasons: reasons, power_limit_w: 500 })),
        ),
      );

      // Act
      const findings = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW).findings;
      const finding = findings.find((f) => f.rule === 'power_throttle');

      // Assess: its own rule, named, not the thermal one
      expect(finding?.severity).toBe(severity);
      expect(finding?.summary).toContain(what);
      expect(finding?.evidence.throttled_usd_per_hour).toBeCloseTo((55.04 / 8) * 0.4, 3);
      expect(finding?.summary).toContain('$2.75/h of GPU time throttled');
      expect(finding?.evidence.power_limit_w).toBe('GPU3 500 W');
      expect(findings.some((f) => f.rule === 'thermal_throttle')).toBe(false);
    },
  );

  it('raises nothing on a healthy compute-bound host', () => {
    // Prepare
    const input = inputFor(horizonBatch(fleet(8, COMPUTE_BOUND), { efa: [efaPort({ rx_drops: 0 })] }));

    // Act
    const { findings, judged } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW);

    // Assess
    expect(findings).toEqual([]);
    expect([...judged].sort()).toEqual(WINDOW_RULES.map((r) => r.id).sort());
  });

  it('never asks for a remediation and never pages', () => {
    // Prepare: every efficiency and health problem at once
    const input = inputFor(
      horizonBatch(
        [
          horizon(0, with_({ gpu_util: 1, sm_active: 0.02 })),
          horizon(1, with_({ sm_active: 0.5, tensor_active: 0 })),
          horizon(2, with_({ dram_active: 0.95, thermal_throttle_ratio: 0.5, pcie_replay_delta: 900 })),
          horizon(3, with_({ sm_active: 0, max_sm_active: 0, gpu_util: 0, compute_processes: 0 })),
        ],
        { efa: [efaPort({ rx_drops: 50 })] },
      ),
    );

    // Act
    const { findings } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW);

    // Assess
    expect(findings.length).toBeGreaterThan(3);
    for (const f of findings) {
      expect(f.action).toBe('notify');
      expect(f.severity).not.toBe('critical');
    }
  });

  it('states a cost per hour for efficiency findings only, never "$0.00/h" for a health finding', () => {
    // Prepare: efficiency problems and hardware/fabric problems on one host
    const input = inputFor(
      horizonBatch(
        [
          horizon(0, with_({ gpu_util: 1, sm_active: 0.02 })),
          horizon(2, with_({ thermal_throttle_ratio: 0.5, pcie_replay_delta: 900 })),
        ],
        { efa: [efaPort({ rx_drops: 50 })] },
      ),
    );
    const kindOf = new Map<RuleId, WindowRule['kind']>(WINDOW_RULES.map((r) => [r.id, r.kind]));

    // Act
    const { findings } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW);

    // Assess
    const health = findings.filter((f) => kindOf.get(f.rule) === 'health');
    const efficiency = findings.filter((f) => kindOf.get(f.rule) === 'efficiency');
    expect(health.map((f) => f.rule).sort()).toEqual(['efa_drops', 'pcie_replay_rate', 'thermal_throttle']);
    expect(efficiency.map((f) => f.rule)).toContain('fake_load');
    for (const f of health) {
      // A health finding states no cost; thermal throttling names the GPU time it throttled, never $0.00.
      expect(f.summary).not.toMatch(
        f.rule === 'thermal_throttle' ? /costs|unpriced|\$0\.00/ : /\$|costs|unpriced/,
      );
      expect(f.evidence).not.toHaveProperty('wasted_usd_per_hour');
    }
    for (const f of efficiency) {
      expect(f.summary).toMatch(/, costs \$\d+\.\d\d\/h$/);
      expect(f.evidence).toHaveProperty('wasted_usd_per_hour');
    }
  });

  it('says what is wrong with this job, the numbers, the dollars per hour and the fix', () => {
    // Prepare: GPUs 1 and 2 of a p5.48xlarge (55.04 USD/h, 6.88 per GPU) leave the tensor cores idle at 50 % SM
    const input = inputFor(
      horizonBatch([
        horizon(0, COMPUTE_BOUND),
        horizon(1, with_({ sm_active: 0.5, tensor_active: 0.01 })),
        horizon(2, with_({ sm_active: 0.5, tensor_active: 0.0 })),
      ]),
    );

    // Act
    const [finding] = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW).findings;

    // Assess
    expect(finding).toMatchObject({
      rule: 'tensor_idle',
      severity: 'info',
      instance_id: 'i-0abc12345def67890',
      summary:
        'job pretrain-7b (team llm) on GPUs 1,2: tensor cores idle (tensor active < 5 %), costs $6.88/h',
      evidence: {
        gpus: '1,2',
        tensor_active: 'GPU1 1 %, GPU2 0 %',
        sm_active: 'GPU1 50 %, GPU2 50 %',
        wasted_usd_per_hour: 6.88,
        diagnosis: 'tensor_idle',
      },
    });
    expect(finding?.remedy).toMatch(/mixed precision/);
    expect(finding?.remedy).toMatch(/multiples of 8/);
  });

  it('names the EFA port that stands out', () => {
    // Prepare
    const input = inputFor(
      horizonBatch(fleet(1, COMPUTE_BOUND), {
        efa: [efaPort({ rx_drops: 3 }, 'rdmap16s27'), efaPort({ rx_drops: 4000 }, 'rdmap48s27')],
      }),
    );

    // Act
    const [finding] = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW).findings;

    // Assess
    expect(finding?.summary).toMatch(
      /: EFA rdmap48s27 port 1 stands out: rx_drops \+4000 \(2 ports in trouble\)/,
    );
    expect(finding?.evidence.worst_port).toBe('rdmap48s27 port 1');
  });

  it('counts a port in trouble in several windows of a merged batch once, naming its worst window', () => {
    // Prepare: a minute of a p5's windows merged; one port drops in all six, another in one
    const at = (w: number) => ({
      start: new Date(Date.parse('2026-03-10T10:00:00Z') + w * 10_000).toISOString(),
      end: new Date(Date.parse('2026-03-10T10:00:10Z') + w * 10_000).toISOString(),
    });
    const efa = [0, 1, 2, 3, 4, 5].flatMap((w) => [
      { ...efaPort({ rx_drops: w === 2 ? 4000 : 200 }, 'rdmap48s27'), ...at(w) },
      { ...efaPort({ rx_drops: w === 4 ? 150 : 0 }, 'rdmap16s27'), ...at(w) },
    ]);
    const input = inputFor(horizonBatch(fleet(1, COMPUTE_BOUND), { efa }));

    // Act
    const [finding] = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW).findings;

    // Assess
    expect(finding?.summary).toMatch(
      /: EFA rdmap48s27 port 1 stands out: rx_drops \+4000 \(2 ports in trouble\)/,
    );
    expect(finding?.evidence).toMatchObject({
      worst_port: 'rdmap48s27 port 1',
      ports_in_trouble:
        'rdmap48s27 port 1: rx_drops +4000 (worst of 6 windows); rdmap16s27 port 1: rx_drops +150',
      window_start: at(2).start,
    });
  });

  it('follows an overridden threshold', () => {
    // Prepare
    const ctx = {
      ...DEFAULT_RULE_CONTEXT,
      thresholds: { ...DEFAULT_RULE_CONTEXT.thresholds, memoryBoundDramActiveAtLeast: 0.3 },
    };
    const input = inputFor(horizonBatch(fleet(2, COMPUTE_BOUND)), new Map(), ctx.thresholds);

    // Act
    const { findings } = evaluateWindowRules(input, ctx, NOW);

    // Assess
    expect(findings.map((f) => f.rule)).toEqual(['memory_bound']);
  });
});
