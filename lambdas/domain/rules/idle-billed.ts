import { MS_PER_SECOND } from '../constants';
import { gpuKey } from './gpu-ref';
import { NOT_JUDGED } from './rule';
import { windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `idle_billed` (docs/design.md §6): a GPU idle with no process (`nextIdleSince`: a whole horizon below
 * `idleSmActiveBelow`, `compute_processes` = 0) for ≥ `idleBilledS` (30 min). The horizon covers 15 min, so
 * "idle since" comes from the StateStore (`input.idleSince`). Judges GPUs with a judged horizon. Warning,
 * to the owner: the instance is billed for nothing.
 */
export const idleBilledRule: WindowRule<'idle_billed'> = {
  id: 'idle_billed',
  reads: 'horizons',
  kind: 'efficiency',
  evaluate: (input, ctx, now) => {
    if (input.gpus.length === 0) return NOT_JUDGED;
    const t = ctx.thresholds;
    const idleFor = (since: string | undefined): number | undefined =>
      since === undefined ? undefined : (now.getTime() - Date.parse(since)) / MS_PER_SECOND;
    const gpus = input.gpus.filter(
      (g) => (idleFor(input.idleSince.get(gpuKey(g.ref))) ?? 0) >= t.idleBilledS,
    );
    if (gpus.length === 0) return { judged: true, findings: [] };
    const longest = Math.max(...gpus.map((g) => idleFor(input.idleSince.get(gpuKey(g.ref))) as number));
    return {
      judged: true,
      findings: [
        windowFinding(input, {
          rule: 'idle_billed',
          severity: 'warning',
          gpus,
          what: `idle with no process for ${Math.floor(longest / 60)} min while billed`,
          remedy:
            'Nothing runs on these GPUs: stop or scale in the instance, or schedule work on it (check for a crashed or finished job that left the node up).',
          evidence: {
            idle_since: gpus
              .map((g) => {
                const slice = g.window.gpu_instance_id === undefined ? '' : `/gi${g.window.gpu_instance_id}`;
                return `GPU${g.window.gpu.index}${slice} ${input.idleSince.get(gpuKey(g.ref))}`;
              })
              .join(', '),
            idle_min: Math.floor(longest / 60),
            idle_at_least_min: t.idleBilledS / 60,
          },
        }),
      ],
    };
  },
};
