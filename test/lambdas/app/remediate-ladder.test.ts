import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { PipelineDeps } from '../../../lambdas/app/pipeline';
import { remediate } from '../../../lambdas/app/remediate';
import { DEFAULT_REMEDIATION_LIMITS, type Finding } from '../../../lambdas/domain';
import type { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { NOW, validBatch } from '../contract/batches';
import { directoryWithGroup, type RecordingRemediator } from '../handlers/fakes';
import { embeddedPipeline } from './embedded-pipeline';

const GROUP = { name: 'train-p5', desired_capacity: 40, tags: {} };
const batch = validBatch();
const instanceId = batch.host.instance_id;

/** A reset-class fault (the Xid policy's `reset`, e.g. a lone Xid 119/120) stamped `s` seconds after NOW. */
function resetFault(s: number, instance = instanceId): Finding {
  return {
    rule: 'xid_fatal',
    severity: 'warning',
    action: 'reset',
    instance_id: instance,
    instance_type: 'p5.48xlarge',
    gpu_index: 2,
    at: new Date(NOW.getTime() + s * 1000).toISOString(),
    summary: 'Xid 120 (GSP error) on GPU 2',
    remedy: 'reset the GPU',
    evidence: { xid: 120 },
    variant: 'xid120',
  };
}

const at = (s: number) => new Date(NOW.getTime() + s * 1000);

/** The batch of another instance. */
const batchOf = (id: string) => ({ ...batch, host: { ...batch.host, instance_id: id } });

describe('remediate: the ladder, reset before replace', () => {
  let store: DuckDbStore;
  let remediator: RecordingRemediator;
  let deps: PipelineDeps;

  beforeEach(async () => {
    ({ store, remediator, deps } = await embeddedPipeline());
  });

  afterEach(async () => {
    await store.close();
  });

  it('reboots on a lone reset-class fault, skips the lines still in flight, and replaces when it comes back', async () => {
    // Prepare
    const info = await directoryWithGroup(GROUP).describe(instanceId, batch.host.region);

    // Act: the fault; a line of the old boot 60 s later; the fault again 20 minutes after the reboot
    const first = await remediate(resetFault(0), batch, info, deps, at(5));
    const inFlight = await remediate(resetFault(60), batch, info, deps, at(65));
    const back = await remediate(resetFault(1200), batch, info, deps, at(1205));

    // Assess
    expect([first.action, inFlight.action, back.action]).toEqual(['reboot', 'skip', 'replace']);
    expect(remediator.rebooted).toEqual([instanceId]);
    expect(remediator.replaced).toEqual([instanceId]);
    expect(back.reason).toMatch(/came back 1195 s after the reboot/);
    expect(await store.getLastReboot(instanceId)).toMatchObject({
      action: 'reboot',
      at: at(5).toISOString(),
    });
    expect(await store.getRemediation(instanceId)).toMatchObject({ action: 'replace' });
  });

  it('reboots again when the fault comes back after the reboot window', async () => {
    // Act
    await remediate(resetFault(0), batch, undefined, deps, at(5));
    const later = await remediate(resetFault(3700), batch, undefined, deps, at(3705));

    // Assess
    expect(later.action).toBe('reboot');
    expect(remediator.rebooted).toEqual([instanceId, instanceId]);
  });

  it('decides and records a reboot in dry-run (local mode) without rebooting anything, and a repeat replaces', async () => {
    // Prepare
    const local = { ...deps, dryRun: true };

    // Act
    const first = await remediate(resetFault(0), batch, undefined, local, at(5));
    const back = await remediate(resetFault(600), batch, undefined, local, at(605));

    // Assess
    expect(first).toMatchObject({ action: 'reboot', dry_run: true });
    expect(back).toMatchObject({ action: 'replace', dry_run: true });
    expect(remediator.rebooted).toEqual([]);
    expect(remediator.replaced).toEqual([]);
  });

  it('escalates over the group reboot budget, and releases the reservation when the reboot fails', async () => {
    // Prepare
    const info = await directoryWithGroup(GROUP).describe(instanceId, batch.host.region);
    const others = Array.from({ length: DEFAULT_REMEDIATION_LIMITS.maxRebootsPerGroupPerWindow }, (_, i) =>
      `i-0b00000000000000${i}`.slice(0, 19),
    );

    // Act
    for (const id of others) await remediate(resetFault(0, id), batchOf(id), info, deps, at(5));
    const over = await remediate(resetFault(0), batch, info, deps, at(6));
    remediator.failWith = new Error('UnauthorizedOperation');
    const failed = await remediate(
      resetFault(0, 'i-0c000000000000001'),
      batchOf('i-0c000000000000001'),
      undefined,
      deps,
      at(7),
    );
    remediator.failWith = undefined;
    const retried = await remediate(
      resetFault(20, 'i-0c000000000000001'),
      batchOf('i-0c000000000000001'),
      undefined,
      deps,
      at(27),
    );

    // Assess
    expect(over.action).toBe('escalate');
    expect(over.reason).toMatch(
      /reboot rate limit: 4 reboot\(s\) in Auto Scaling group train-p5 in the last 3600 s, limit 4/,
    );
    expect(failed.action).toBe('escalate');
    expect(failed.reason).toMatch(/reboot could not be done safely \(UnauthorizedOperation\)/);
    expect(retried.action).toBe('reboot');
  });
});
