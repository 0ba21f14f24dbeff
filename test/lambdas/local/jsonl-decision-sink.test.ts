import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RemediationDecision } from '../../../lambdas/domain';
import { JsonlDecisionSink } from '../../../lambdas/local/jsonl-decision-sink';

const decision: RemediationDecision = {
  rule: 'xid_fatal',
  severity: 'critical',
  instance_id: 'i-0abc',
  asg_name: 'train-p5',
  action: 'scheduled',
  reason: 'replacing i-0abc in 15 minutes',
  at: '2026-03-10T12:00:00.000Z',
  alert_id: 'xid_fatal:i-0abc',
  dry_run: true,
  pending: { action: 'replace', decided_at: '2026-03-10T12:00:00.000Z', due_at: '2026-03-10T12:15:00.000Z' },
};

describe('JsonlDecisionSink', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-decisions-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('writes a grace period notice with its pending reboot or replacement, and no pending field otherwise', async () => {
    // Prepare
    const path = join(dir, 'remediation.jsonl');
    const sink = new JsonlDecisionSink(path);
    const { pending: _, ...plain } = decision;

    // Act
    await sink.record(decision);
    await sink.record({ ...plain, action: 'skip' });

    // Assess
    const lines = (await readFile(path, 'utf8'))
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(lines[0]).toMatchObject({ action: 'scheduled', dry_run: true, pending: decision.pending });
    expect(lines[1]).not.toHaveProperty('pending');
  });
});
