import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseKernelLog, toXidEvent } from '../../../../agent/sources/kmsg';
import type { Batch, GpuEvent } from '../../../../lambdas/contract';
import {
  DEFAULT_RULE_CONTEXT,
  DEFAULT_XID_POLICY,
  evaluatePointRules,
  withXidOverrides,
  xidFatalRule,
} from '../../../../lambdas/domain';
import { flushWindow, makeBatch, NOW, readKmsgXids } from '../batch-builder';

const xid = (code: number, at: string, extra: Record<string, unknown> = {}) => ({
  at,
  kind: 'xid',
  xid: code,
  source: 'nvml',
  gpu_index: 2,
  ...extra,
});

describe('xid_fatal on the real kernel log with Xid 48, 63 and 9 × 94', () => {
  const now = new Date('2024-11-15T12:05:00Z');
  const events = readKmsgXids('dmesg-xid48-63-94.iso.log');
  const batch = makeBatch({ events, sentAt: '2024-11-15T12:04:00Z' }, now);

  it('reads 11 Xid lines from the capture', () => {
    // Prepare / Act / Assess
    expect(events.map((e) => e.xid)).toEqual([48, 63, 94, 94, 94, 94, 94, 94, 94, 94, 94]);
  });

  it('gives one warning reset for 48 (the catalog resets first), one info notify for 63 and one warning notify for 94 counting 9', () => {
    // Prepare
    // Act
    const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, now);
    // Assess
    expect(findings.map((f) => [f.rule, f.evidence.xid, f.severity, f.action, f.evidence.count])).toEqual([
      ['xid_fatal', 48, 'warning', 'reset', 1],
      ['xid_fatal', 63, 'info', 'notify', 1],
      ['xid_fatal', 94, 'warning', 'notify', 9],
    ]);
    expect(findings.every((f) => f.pci_bus_id === '0000:19:00.0' && f.gpu_index === undefined)).toBe(true);
  });

  it('says what and where in the summary and keeps the first and last times and the process', () => {
    // Prepare
    // Act
    const [dbe, , contained] = xidFatalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, now).findings;
    // Assess
    expect(dbe?.summary).toBe('Xid 48 (double-bit ECC error) on GPU at 0000:19:00.0');
    expect(dbe?.at).toBe('2024-11-15T12:02:03.470068+00:00');
    expect(contained?.at).toBe('2024-11-15T12:02:03.506595+00:00');
    expect(contained?.evidence).toMatchObject({
      first_at: '2024-11-15T12:02:03.506595+00:00',
      last_at: '2024-11-15T12:02:03.638794+00:00',
      pids: '1248209',
      process_names: 'python3.10',
      sources: 'kmsg',
      mnemonic: 'CONTAINED_ERROR',
    });
  });

  it('takes the GPU index from the window with the same PCI bus id', () => {
    // Prepare
    const withWindow = makeBatch(
      {
        events,
        sentAt: '2024-11-15T12:04:00Z',
        windows: [
          flushWindow(
            5,
            { gpu_util: 0 },
            { pci: '00000000:19:00.0', start: '2024-11-15T12:02:00Z', end: '2024-11-15T12:02:10Z' },
          ),
        ],
      },
      now,
    );
    // Act
    const findings = xidFatalRule.evaluate(withWindow, DEFAULT_RULE_CONTEXT, now).findings;
    // Assess
    expect(findings.map((f) => [f.gpu_index, f.pci_bus_id])).toEqual([
      [5, '0000:19:00.0'],
      [5, '0000:19:00.0'],
      [5, '0000:19:00.0'],
    ]);
  });
});

describe('xid_fatal on the real kernel log with 629 × Xid 13 and 7 × Xid 43', () => {
  const now = new Date('2025-01-21T04:45:00Z');
  const events = readKmsgXids('dmesg-xid13-43.decode.iso.log');
  // 636 events exceed the 256-per-batch contract limit: the agent sends them in three real batches.
  const batches = [0, 256, 512].map((from) =>
    makeBatch({ events: events.slice(from, from + 256), sentAt: '2025-01-21T04:44:00Z' }, now),
  );
  const merged: Batch = { ...(batches[0] as Batch), events: batches.flatMap((b) => b.events ?? []) };

  it('reads 629 Xid 13 and 7 Xid 43 from the capture', () => {
    // Prepare / Act / Assess
    expect(events.filter((e) => e.xid === 13)).toHaveLength(629);
    expect(events.filter((e) => e.xid === 43)).toHaveLength(7);
  });

  it('gives one info notify for 13 counting 629 under xid_app (never xid_fatal) and nothing for 43', () => {
    // Prepare
    // Act
    const findings = evaluatePointRules(merged, DEFAULT_RULE_CONTEXT, now);
    // Assess
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      rule: 'xid_app',
      severity: 'info',
      action: 'notify',
      pci_bus_id: '0000:38:00.0',
      evidence: { xid: 13, count: 629 },
    });
  });

  it.each([0, 1, 2])('never asks to replace or reset from batch %i alone', (i) => {
    // Prepare
    const batch = batches[i] as Batch;
    // Act
    const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, now);
    // Assess
    expect(findings.filter((f) => f.action === 'replace' || f.action === 'reset')).toEqual([]);
  });
});

describe('xid_fatal policy outcomes', () => {
  it.each([
    [79, 'critical', 'replace'],
    [95, 'warning', 'reset'],
    [119, 'warning', 'reset'],
    [120, 'warning', 'reset'],
    [46, 'warning', 'reset'],
    [31, 'info', 'notify', 'xid_app'],
    [92, 'warning', 'notify'],
    [54, 'warning', 'notify', 'xid_notice'],
    [555, 'warning', 'notify', 'xid_notice'],
  ])('maps one Xid %i to %s/%s', (code, severity, action, rule = 'xid_fatal') => {
    // Prepare
    const batch = makeBatch({ events: [xid(code, '2026-03-10T10:00:05Z')] });
    // Act
    const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({ rule, severity, action, gpu_index: 2, at: '2026-03-10T10:00:05Z' });
  });

  it('judges each class only under its own rule: a batch of 13, 48 and 54 gives one finding per rule', () => {
    // Prepare
    const batch = makeBatch({
      events: [
        xid(13, '2026-03-10T10:00:01Z'),
        xid(48, '2026-03-10T10:00:02Z'),
        xid(54, '2026-03-10T10:00:03Z'),
      ],
    });
    // Act
    const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.map((f) => [f.rule, f.evidence.xid, f.evidence.xid_class])).toEqual([
      ['xid_fatal', 48, 'hardware'],
      ['xid_app', 13, 'application'],
      ['xid_notice', 54, 'notice'],
    ]);
  });

  it.each([43, 45, 38])('gives nothing for ignored Xid %i', (code) => {
    // Prepare
    const batch = makeBatch({ events: [xid(code, '2026-03-10T10:00:05Z')] });
    // Act / Assess
    expect(xidFatalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings).toEqual([]);
  });

  it('resets for a single Xid 74 or one burst of them, and replaces when it comes back after the burst', () => {
    // Prepare
    const one = makeBatch({ events: [xid(74, '2026-03-10T10:00:01Z')] });
    const burst = makeBatch({ events: [xid(74, '2026-03-10T10:00:01Z'), xid(74, '2026-03-10T10:00:09Z')] });
    const back = makeBatch({ events: [xid(74, '2026-03-10T09:40:01Z'), xid(74, '2026-03-10T10:00:01Z')] });
    // Act
    const [first] = xidFatalRule.evaluate(one, DEFAULT_RULE_CONTEXT, NOW).findings;
    const [inBurst] = xidFatalRule.evaluate(burst, DEFAULT_RULE_CONTEXT, NOW).findings;
    const [again] = xidFatalRule.evaluate(back, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(first).toMatchObject({ severity: 'warning', action: 'reset', evidence: { episodes: 1 } });
    expect(inBurst).toMatchObject({
      severity: 'warning',
      action: 'reset',
      evidence: { count: 2, episodes: 1 },
    });
    expect(again).toMatchObject({
      severity: 'critical',
      action: 'replace',
      evidence: { count: 2, episodes: 2 },
    });
    expect(again?.summary).toContain('came back');
  });

  it('resets for a lone Xid 48 (the catalog: a GPU reset clears it), replaces when a DBE comes back, and a 64 beside it replaces', () => {
    // Prepare
    const lone = makeBatch({ events: [xid(48, '2026-03-10T10:00:01Z'), xid(63, '2026-03-10T10:00:01Z')] });
    const back = makeBatch({ events: [xid(48, '2026-03-10T06:00:01Z'), xid(48, '2026-03-10T10:00:01Z')] });
    const remapFailed = makeBatch({
      events: [xid(48, '2026-03-10T10:00:01Z'), xid(64, '2026-03-10T10:00:02Z')],
    });
    // Act
    const [first] = xidFatalRule.evaluate(lone, DEFAULT_RULE_CONTEXT, NOW).findings;
    const [again] = xidFatalRule.evaluate(back, DEFAULT_RULE_CONTEXT, NOW).findings;
    const both = xidFatalRule.evaluate(remapFailed, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(first).toMatchObject({ severity: 'warning', action: 'reset', evidence: { xid: 48, episodes: 1 } });
    expect(first?.remedy).toContain('reset the GPU');
    expect(again).toMatchObject({
      severity: 'critical',
      action: 'replace',
      evidence: { xid: 48, episodes: 2 },
    });
    expect(both.map((f) => [f.evidence.xid, f.action])).toEqual([
      [48, 'reset'],
      [64, 'replace'],
    ]);
  });

  it('never replaces for a lone Xid 120 at driver start; one back two hours later replaces', () => {
    // Prepare
    const lone = makeBatch({ events: [xid(120, '2026-03-10T10:00:01Z')] });
    const apart = makeBatch({ events: [xid(120, '2026-03-10T08:00:01Z'), xid(120, '2026-03-10T10:00:01Z')] });
    // Act
    const [a] = xidFatalRule.evaluate(lone, DEFAULT_RULE_CONTEXT, NOW).findings;
    const [b] = xidFatalRule.evaluate(apart, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(a).toMatchObject({
      action: 'reset',
      evidence: { catalog_action: 'RESET_GPU', xid_class: 'hardware' },
    });
    expect(b?.action).toBe('replace');
  });

  it('asks for a reset, not a replacement, for the real GSP hang that keeps printing Xid 119 until reset', () => {
    // Prepare: 5 Xid 119 over 6 minutes on one GPU never reset (the driver: "The GPU likely needs to be reset")
    const text = readFileSync(
      new URL('../../../fixtures/real/dmesg-xid119-gsp-timeout.ctime.log', import.meta.url),
      'utf8',
    );
    const events = parseKernelLog(text).records.map((r) => toXidEvent(r) as GpuEvent);
    const batch = makeBatch({ events, sentAt: '2025-02-23T16:31:00Z' }, new Date('2025-02-23T16:32:00Z'));
    // Act
    const findings = xidFatalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(events.map((e) => e.xid)).toEqual([119, 119, 119, 119, 119]);
    expect(findings).toHaveLength(1);
    expect(findings[0]).toMatchObject({
      action: 'reset',
      severity: 'warning',
      pci_bus_id: '0000:9b:00.0',
      evidence: { count: 5, episodes: 1, mnemonic: 'GSP_RPC_TIMEOUT' },
    });
  });

  it('lets the rules overrides change when a reset-class Xid escalates', () => {
    // Prepare
    const ctx = {
      ...DEFAULT_RULE_CONTEXT,
      xidPolicy: withXidOverrides(DEFAULT_XID_POLICY, { 120: { replace_count: 3, burst_s: 0 } }),
    };
    const two = makeBatch({ events: [xid(120, '2026-03-10T10:00:01Z'), xid(120, '2026-03-10T10:00:02Z')] });
    const three = makeBatch({
      events: ['10:00:01', '10:00:02', '10:00:03'].map((t) => xid(120, `2026-03-10T${t}Z`)),
    });
    // Act / Assess
    expect(xidFatalRule.evaluate(two, ctx, NOW).findings[0]?.action).toBe('reset');
    expect(xidFatalRule.evaluate(three, ctx, NOW).findings[0]?.action).toBe('replace');
  });

  it('counts the same Xid from NVML and kmsg within a second once', () => {
    // Prepare
    const batch = makeBatch({
      events: [xid(74, '2026-03-10T10:00:01.000Z'), xid(74, '2026-03-10T10:00:01.400Z', { source: 'kmsg' })],
    });
    // Act
    const [finding] = xidFatalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(finding).toMatchObject({ action: 'reset', evidence: { count: 1, duplicates_dropped: 1 } });
  });

  it.each([
    ['GPU recovery action changed from 0x0 (None) to 0x2 (Node Reboot Required)', 'xid_fatal', 'reset'],
    ['GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)', 'xid_fatal', 'reset'],
    ['GPU recovery action changed from 0x2 (Node Reboot Required) to 0x0 (None)', 'xid_notice', 'notify'],
  ])('follows the recovery action of Xid 154 "%s"', (detail, rule, action) => {
    // Prepare
    const batch = makeBatch({ events: [xid(154, '2026-03-10T10:00:01Z', { detail })] });
    // Act
    const findings = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(findings.map((f) => [f.rule, f.action])).toEqual([[rule, action]]);
  });

  it('puts the driver text of Xid 154 in the summary', () => {
    // Prepare
    const batch = makeBatch({
      events: [
        xid(154, '2026-03-10T10:00:01Z', { detail: 'GPU recovery action changed to Node Reboot Required' }),
      ],
    });
    // Act
    const [finding] = evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW);
    // Assess
    expect(finding?.rule).toBe('xid_notice');
    expect(finding?.severity).toBe('warning');
    expect(finding?.summary).toContain('Node Reboot Required');
  });

  it('follows an overridden policy', () => {
    // Prepare
    const ctx = {
      ...DEFAULT_RULE_CONTEXT,
      xidPolicy: withXidOverrides(DEFAULT_XID_POLICY, { 13: { action: 'ignore' } }),
    };
    const batch = makeBatch({ events: [xid(13, '2026-03-10T10:00:01Z')] });
    // Act / Assess
    expect(evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW)).toHaveLength(1);
    expect(evaluatePointRules(batch, ctx, NOW)).toEqual([]);
  });

  it('orders findings by GPU then code, whatever the event order', () => {
    // Prepare
    const batch = makeBatch({
      events: [
        xid(95, '2026-03-10T10:00:03Z', { gpu_index: 3 }),
        xid(48, '2026-03-10T10:00:02Z', { gpu_index: 3 }),
        xid(79, '2026-03-10T10:00:01Z', { gpu_index: 1 }),
      ],
    });
    // Act
    const findings = xidFatalRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(findings.map((f) => [f.gpu_index, f.evidence.xid])).toEqual([
      [1, 79],
      [3, 48],
      [3, 95],
    ]);
  });
});
