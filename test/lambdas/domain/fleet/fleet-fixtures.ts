import type { FleetInput, RunningInstance } from '../../../../lambdas/domain/fleet';
import type { StoredGpuWindow, WasteGroupRow } from '../../../../lambdas/domain/ports';
import { gpuRow } from '../../rows';

/** The evaluator's clock in these tests. */
export const NOW = new Date('2026-03-10T12:00:00.000Z');

/** ISO time `s` seconds before {@link NOW}. */
export function ago(s: number): string {
  return new Date(NOW.getTime() - s * 1000).toISOString();
}

/** A running p5.48xlarge in us-east-1, launched 2 h before {@link NOW}. */
export function running(id: string, overrides: Partial<RunningInstance> = {}): RunningInstance {
  return {
    instance_id: id,
    instance_type: 'p5.48xlarge',
    region: 'us-east-1',
    az: 'us-east-1a',
    launch_time: ago(7200),
    lifecycle: 'on-demand',
    tags: { team: 'vision', job: 'train-42' },
    ...overrides,
  };
}

/** Eight GPUs' flush windows of one node of `job` over the last 10 min, with these metric means. */
export function nodeWindows(
  id: string,
  job: string,
  metrics: { sm_active?: number; power_w?: number; gpu_temp_c?: number },
): StoredGpuWindow[] {
  const rows: StoredGpuWindow[] = [];
  for (let k = 0; k < 6; k++) {
    for (let gpu = 0; gpu < 8; gpu++) {
      rows.push(
        gpuRow({
          instance_id: id,
          gpu_index: gpu,
          job,
          time: ago(60 + k * 100),
          metrics: { gpu_util: 0.99, ...metrics },
        }),
      );
    }
  }
  return rows;
}

/** A team's ledger sums over the waste span (1 h). */
export function teamRow(team: string | undefined, cost_usd: number, wasted_usd: number): WasteGroupRow {
  return {
    ...(team === undefined ? {} : { group: team }),
    gpu_hours: cost_usd / 6.88,
    cost_usd,
    idle_usd: wasted_usd,
    held_idle_usd: 0,
    underused_usd: 0,
    broken_usd: 0,
    wasted_usd,
    throttled_usd: 0,
    wasted_by_diagnosis_usd: wasted_usd > 0 ? { idle: wasted_usd } : {},
  };
}

/** A fleet input with nothing in it, to spread over. */
export function fleet(overrides: Partial<FleetInput> = {}): FleetInput {
  return { instances: [], lastSeen: new Map(), nodeMeans: [], teams: [], ...overrides };
}
