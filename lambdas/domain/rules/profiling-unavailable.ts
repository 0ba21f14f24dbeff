import { NOT_JUDGED } from './rule';
import { windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `profiling_unavailable`: the host sends `agent.profiling_source: 'none'` (e.g. an A100 without
 * DCGM: GPM exists only on Hopper and newer), so SM activity is not measured, the ledger falls back to
 * `gpu_util` (an upper bound on efficiency: waste is a lower bound) and the efficiency rules cannot name a
 * leaf (`unknown`). Info, to the platform team, once per instance and cooldown. Judged on every batch
 * with a judged horizon.
 */
export const profilingUnavailableRule: WindowRule<'profiling_unavailable'> = {
  id: 'profiling_unavailable',
  reads: 'horizons',
  kind: 'health',
  evaluate: (input) => {
    if (input.gpus.length === 0) return NOT_JUDGED;
    if (input.batch.agent.profiling_source !== 'none') return { judged: true, findings: [] };
    return {
      judged: true,
      findings: [
        windowFinding(input, {
          rule: 'profiling_unavailable',
          severity: 'info',
          gpus: input.gpus,
          what: 'no profiling counters (no GPM, no DCGM): efficiency is an upper bound from GPU util and no diagnosis can be named',
          remedy:
            'Platform team: run NVIDIA dcgm-exporter on the host with the DCGM_FI_PROF_SM_ACTIVE, DCGM_FI_PROF_SM_OCCUPANCY, DCGM_FI_PROF_PIPE_TENSOR_ACTIVE and DCGM_FI_PROF_DRAM_ACTIVE counters enabled (they are commented out in its default CSV) and set the agent’s profiling source to dcgm-exporter.',
          evidence: {
            profiling_source: 'none',
            ...(input.batch.agent.driver_version === undefined
              ? {}
              : { driver_version: input.batch.agent.driver_version }),
            gpu_name: input.gpus[0]?.window.gpu.name ?? 'unknown',
          },
          costed: false,
        }),
      ],
    };
  },
};
