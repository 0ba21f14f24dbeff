import { bench, describe } from 'vitest';
import { playBatches } from '../../agent/playback/playback';
import { buildReplayBatches, loadReplayManifest } from '../../agent/playback/replay';
import {
  DEFAULT_SIMULATED_FLEET,
  type SimulatedHostSpec,
  simulatedPlaybackHost,
} from '../../agent/playback/simulate-fleet';
import { BUNDLED_REPLAY_MANIFEST } from '../../bin/commands/paths';

/**
 * What a simulated or replayed host costs to play through the agent's own loop (1 s polls, the
 * horizon, the batcher) before anything is sent: the part of `gpu-sentinel local` and
 * `gpu-sentinel scenarios` that is not ingest. Setup is at the top level: vitest bench does not run
 * beforeAll hooks.
 */
const TO = new Date('2026-11-23T12:00:00Z');
const FROM = new Date(TO.getTime() - 20 * 60_000);
const straggler = DEFAULT_SIMULATED_FLEET.find((h) => h.name === 'straggler');
const single = DEFAULT_SIMULATED_FLEET.find((h) => h.name === 'fake-load');
if (!straggler || !single) throw new Error('the default fleet lost its straggler or fake-load host');
const manifest = await loadReplayManifest(BUNDLED_REPLAY_MANIFEST);

/** Plays one simulated host of the default fleet over the 20 minutes. */
async function simulate(spec: SimulatedHostSpec): Promise<void> {
  const host = simulatedPlaybackHost(spec, {
    seed: 1,
    startMs: FROM.getTime(),
    hostNumber: 1,
    agentVersion: 'bench',
  });
  await playBatches(host, { from: FROM, to: TO, flushIntervalS: 300 });
}

describe('playback through the agent loop', () => {
  bench('simulate one 1-GPU host, 20 min at 1 Hz, flush every 5 min', () => simulate(single));

  bench('simulate one 8-GPU host, 20 min at 1 Hz, flush every 5 min', () => simulate(straggler));

  bench('replay the bundled captures: 5 hosts, 1 h at 1 Hz, flush every 60 s', async () => {
    await buildReplayBatches(manifest, { now: TO, agentVersion: 'bench' });
  });
});
