import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { GpuMetrics } from '../../../../lambdas/contract';
import {
  DEFAULT_RULE_CONTEXT,
  DIAGNOSES,
  evaluateWindowRules,
  WINDOW_RULES,
} from '../../../../lambdas/domain';
import { NOW } from '../batch-builder';
import { horizon, horizonBatch, inputFor } from './horizons';

/** Any contract-valid subset of the metrics the window rules read (each may be absent). */
const metrics: fc.Arbitrary<GpuMetrics> = fc
  .record(
    {
      gpu_util: fc.double({ min: 0, max: 1, noNaN: true }),
      sm_active: fc.double({ min: 0, max: 1, noNaN: true }),
      max_sm_active: fc.double({ min: 0, max: 1, noNaN: true }),
      sm_active_cv: fc.double({ min: 0, max: 5, noNaN: true }),
      sm_occupancy: fc.double({ min: 0, max: 1, noNaN: true }),
      tensor_active: fc.double({ min: 0, max: 1, noNaN: true }),
      dram_active: fc.double({ min: 0, max: 1, noNaN: true }),
      pcie_rx_bytes_per_s: fc.double({ min: 0, max: 6e10, noNaN: true }),
      max_pcie_rx_bytes_per_s: fc.double({ min: 0, max: 6e10, noNaN: true }),
      fb_used_growth_bytes_per_s: fc.double({ min: -1e9, max: 1e9, noNaN: true }),
      gpu_temp_c: fc.double({ min: 20, max: 100, noNaN: true }),
      max_gpu_temp_c: fc.double({ min: 20, max: 110, noNaN: true }),
      thermal_throttle_ratio: fc.double({ min: 0, max: 1, noNaN: true }),
      power_w: fc.double({ min: 0, max: 700, noNaN: true }),
      power_cv: fc.double({ min: 0, max: 3, noNaN: true }),
      pcie_replay_delta: fc.nat(10_000),
      nvlink_crc_errors_delta: fc.nat(10_000),
      ecc_sbe_volatile_delta: fc.nat(10_000),
      compute_processes: fc.nat(8),
    },
    { requiredKeys: [] },
  )
  .map((m) => ({ ...m, fb_total_bytes: 80e9, fb_used_bytes: 40e9 }));

describe('window rules, any contract-valid horizons', () => {
  it('never page, never remediate, give one finding per rule at most, and one leaf per judged GPU', () => {
    fc.assert(
      fc.property(
        fc.array(metrics, { minLength: 1, maxLength: 8 }),
        fc.constantFrom('gpm', 'dcgm', 'none') as fc.Arbitrary<'gpm' | 'dcgm' | 'none'>,
        (gpus, profiling) => {
          // Prepare
          const input = inputFor(
            horizonBatch(
              gpus.map((m, i) => horizon(i, m)),
              { profiling },
            ),
          );

          // Act
          const { findings, judged } = evaluateWindowRules(input, DEFAULT_RULE_CONTEXT, NOW);

          // Assess
          for (const f of findings) {
            expect(f.severity).not.toBe('critical');
            expect(f.action).toBe('notify');
            expect(judged.has(f.rule)).toBe(true);
          }
          expect(new Set(findings.map((f) => f.rule)).size).toBe(findings.length);
          expect(findings.every((f) => WINDOW_RULES.some((r) => r.id === f.rule))).toBe(true);
          expect(input.gpus.every((g) => (DIAGNOSES as readonly string[]).includes(g.diagnosis))).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });
});
