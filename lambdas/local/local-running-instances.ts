import { FLEET_LAST_SEEN_LOOKBACK_S, MS_PER_SECOND } from '../domain/constants';
import type { RunningInstance } from '../domain/fleet/fleet-input';
import type { RunningInstances } from '../domain/fleet/fleet-ports';
import { isGpuInstanceType } from '../domain/fleet/gpu-families';
import type { TelemetryStore } from '../domain/ports';

/**
 * Local mode's stand-in for EC2's running instances (there is no EC2 to ask): every instance of a GPU
 * family that sent a batch in the last `FLEET_LAST_SEEN_LOOKBACK_S` (1 h) before `now` counts as
 * running; one silent for longer counts as stopped. Its region, team and job tags come from its latest
 * window; the start of the look-back stands for its launch time (a local host has no boot to wait for).
 */
export class LocalRunningInstances implements RunningInstances {
  readonly #store: TelemetryStore;

  /** @param store - the local store the pipeline writes */
  constructor(store: TelemetryStore) {
    this.#store = store;
  }

  /**
   * @param now - the evaluator's clock
   * @returns the instances seen in the look-back, by instance id
   * @throws whatever the store throws when it cannot be read
   */
  async listRunning(now: Date): Promise<RunningInstance[]> {
    const from = new Date(now.getTime() - FLEET_LAST_SEEN_LOOKBACK_S * MS_PER_SECOND);
    const to = new Date(now.getTime() + 1);
    const out: RunningInstance[] = [];
    for (const seen of await this.#store.lastSeen({ from, to })) {
      if (!isGpuInstanceType(seen.instance_type)) continue;
      const [latest] = await this.#store.recentWindows({ instance_id: seen.instance_id, from, to, limit: 1 });
      const tags: Record<string, string> = {};
      if (latest?.team !== undefined) tags.team = latest.team;
      if (latest?.job !== undefined) tags.job = latest.job;
      out.push({
        instance_id: seen.instance_id,
        instance_type: seen.instance_type,
        region: latest?.region ?? 'local',
        ...(latest?.az === undefined ? {} : { az: latest.az }),
        launch_time: from.toISOString(),
        lifecycle: 'on-demand',
        tags,
      });
    }
    return out;
  }
}
