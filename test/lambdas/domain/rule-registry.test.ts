import { describe, expect, it } from 'vitest';
import { FLEET_RULES, POINT_RULES, RULE_IDS, WINDOW_RULES } from '../../../lambdas/domain';

/** The rule ids published in SNS attributes and alert ids and stored with firing records: never renamed. */
const PUBLISHED_RULE_IDS = [
  'ecc_dbe',
  'xid_fatal',
  'xid_app',
  'xid_notice',
  'gpu_lost',
  'row_remap_failure',
  'thermal_critical',
  'spot_interruption',
  'fake_load',
  'low_occupancy',
  'tensor_idle',
  'memory_bound',
  'input_bound',
  'cpu_bound',
  'power_sawtooth',
  'idle_billed',
  'memory_pressure',
  'thermal_throttle',
  'power_throttle',
  'straggler',
  'efa_drops',
  'waste_rate',
  'pcie_replay_rate',
  'nvlink_crc_rate',
  'ecc_sbe_rate',
  'profiling_unavailable',
  'agent_silent',
];

describe('rule registry', () => {
  it('derives every published rule id from the rule lists, each once', () => {
    // Assess
    expect([...RULE_IDS].sort()).toEqual([...PUBLISHED_RULE_IDS].sort());
    expect(new Set(RULE_IDS).size).toBe(RULE_IDS.length);
  });

  it.each([
    { list: 'POINT_RULES', rules: POINT_RULES, reads: 'batch' },
    { list: 'WINDOW_RULES', rules: WINDOW_RULES, reads: 'horizons' },
    { list: 'FLEET_RULES', rules: FLEET_RULES, reads: 'fleet' },
  ])('lists in $list only rules that read $reads, each id once', ({ rules, reads }) => {
    // Assess
    expect(rules.map((r) => r.reads)).toEqual(rules.map(() => reads));
    expect(new Set(rules.map((r) => r.id)).size).toBe(rules.length);
  });

  it('shares an id between levels only where one condition is judged at two levels', () => {
    // Act
    const ingest = new Set<string>([...POINT_RULES, ...WINDOW_RULES].map((r) => r.id));
    const shared = FLEET_RULES.map((r) => r.id).filter((id) => ingest.has(id));

    // Assess: a node straggling within an instance or across a job; waste per instance or per team
    expect(shared.sort()).toEqual(['straggler', 'waste_rate']);
  });
});
