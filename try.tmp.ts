import { playBatches } from './agent/sources/playback';
import { DEFAULT_SIMULATED_FLEET, simulatedPlaybackHost } from './agent/sources/simulate-fleet';
import { DEFAULT_RULE_CONTEXT, evaluateWindowRules, judgedHorizons, priceFor } from './lambdas/domain';
const to = new Date(); const from = new Date(to.getTime() - 20*60_000);
for (const [i, spec] of DEFAULT_SIMULATED_FLEET.entries()) {
  const h = simulatedPlaybackHost(spec, { seed: 1+i, startMs: from.getTime(), hostNumber: i, agentVersion: 'x' });
  const bs = await playBatches(h, { from, to, flushIntervalS: 60 });
  const b = bs.at(-1)!;
  const price = priceFor(b.host.instance_type, b.host.region, {}, spec.gpus.length);
  const { gpus, shortGpus } = judgedHorizons(b, DEFAULT_RULE_CONTEXT.thresholds, price);
  const r = evaluateWindowRules({ batch: b, gpus, shortGpus, price, idleSince: new Map() }, DEFAULT_RULE_CONTEXT, to);
  console.log(spec.name.padEnd(18), [...new Set(gpus.map(g=>g.diagnosis))].join(','), '|', r.findings.map(f=>f.rule+(f.gpu_index!==undefined?'@'+f.gpu_index:'')).join(' '));
}
