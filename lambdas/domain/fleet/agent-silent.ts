import { MS_PER_SECOND } from '../constants';
import { onDemandPrice } from '../pricing';
import type { FleetFinding, FleetRule } from './fleet-rule';

/**
 * Rule `agent_silent` (docs/design.md §6): a GPU instance EC2 says is running that sent no
 * batch for `agentSilentAfterS` (300 s), or none at all in the evaluator's look-back: a dead agent, a
 * hung host, or GPUs nobody watches. Instances launched less than `agentSilentAfterS` ago are not
 * judged (their agent is still starting). One alert per instance, warning; it resolves when the
 * instance sends again or stops running (EC2 no longer lists it). The instance's on-demand list price
 * (built-in table, by type and region) is reported as unmonitored spend, USD/hour; an instance type
 * without one is reported `unpriced`, never guessed.
 */
export const agentSilentRule: FleetRule<'agent_silent'> = {
  id: 'agent_silent',
  reads: 'fleet',
  needsInstances: true,
  evaluate: (input, ctx, now) => {
    const afterMs = ctx.thresholds.agentSilentAfterS * MS_PER_SECOND;
    const findings: FleetFinding[] = [];
    for (const instance of input.instances ?? []) {
      const launchedMs = Date.parse(instance.launch_time);
      if (now.getTime() - launchedMs < afterMs) continue;
      const lastSeen = input.lastSeen.get(instance.instance_id);
      const sinceMs = lastSeen === undefined ? launchedMs : Date.parse(lastSeen);
      if (now.getTime() - sinceMs < afterMs) continue;
      const silentS = Math.round((now.getTime() - sinceMs) / MS_PER_SECOND);
      const price = onDemandPrice(instance.instance_type, instance.region);
      const lead =
        lastSeen === undefined
          ? 'no batch from this running GPU instance since it was launched or in the look-back'
          : `no batch for ${Math.round(silentS / 60)} min`;
      findings.push({
        subject: { kind: 'instance', instance },
        finding: {
          rule: 'agent_silent',
          severity: 'warning',
          action: 'notify',
          instance_id: instance.instance_id,
          instance_type: instance.instance_type,
          at: lastSeen ?? instance.launch_time,
          summary: `${lead}: ${price === undefined ? 'unpriced' : `$${price.usd_per_hour.toFixed(2)}/h`} of GPUs unmonitored`,
          remedy:
            'Check the agent on the host (systemctl status gpu-sentinel-agent; journalctl -u gpu-sentinel-agent), its network path to the ingest API and its instance role; if the host hangs, reboot or replace it. A GPU instance without the agent is spend nobody watches: install it or stop the instance.',
          evidence: {
            last_seen: lastSeen ?? 'never (in the look-back)',
            silent_for_s: silentS,
            launch_time: instance.launch_time,
            region: instance.region,
            unmonitored_usd_per_hour: price === undefined ? 'unpriced' : price.usd_per_hour,
            silent_after_s: ctx.thresholds.agentSilentAfterS,
          },
        },
      });
    }
    return { judged: true, findings };
  },
};
