import { describe, expect, it } from 'vitest';
import type { Host } from '../../../lambdas/contract';
import { alertId, type Finding, toAlert, toAsciiLine } from '../../../lambdas/domain';
import { HOST } from './batch-builder';

const FINDING: Finding = {
  rule: 'xid_fatal',
  severity: 'critical',
  action: 'replace',
  instance_id: 'i-0abc12345def67890',
  instance_type: 'p5.48xlarge',
  pci_bus_id: '0000:19:00.0',
  at: '2024-11-15T12:02:03.470068+00:00',
  summary: 'Xid 48 (double-bit ECC error) on GPU at 0000:19:00.0',
  remedy: 'Hardware fault: checkpoint and move the job.',
  evidence: { xid: 48, count: 1, mnemonic: 'GPU_ECC_DBE' },
};

describe('alertId', () => {
  it.each([
    [{ gpu_index: 3, pci_bus_id: '0000:19:00.0' }, 'xid_fatal:i-0abc12345def67890:3'],
    [{ pci_bus_id: '0000:19:00.0' }, 'xid_fatal:i-0abc12345def67890:0000:19:00.0'],
    [{}, 'xid_fatal:i-0abc12345def67890'],
  ])('builds rule:instance[:gpu] from %j', (gpu, id) => {
    // Prepare
    const { pci_bus_id: _p, ...base } = FINDING;
    // Act / Assess
    expect(alertId({ ...base, ...gpu })).toBe(id);
  });
});

describe('toAlert', () => {
  it('writes a short ASCII subject with severity, rule, instance, GPU, type and summary', () => {
    // Prepare / Act
    const alert = toAlert(FINDING, HOST as Host);
    // Assess
    expect(alert.subject).toBe(
      '[CRITICAL] xid_fatal i-0abc12345def67890 GPU 0000:19:00.0 p5.48xlarge: Xid 48 (double-bit ECC error)',
    );
    expect(alert.subject.length).toBeLessThanOrEqual(100);
    expect(alert.id).toBe('xid_fatal:i-0abc12345def67890:0000:19:00.0');
  });

  it.each([
    ['a long summary', 'x'.repeat(400)],
    ['non-ASCII text', 'GPU reached 95 °C ≥ 90 × — “hot” 熱\nsecond line'],
  ])('keeps the subject within 100 printable ASCII characters for %s', (_n, summary) => {
    // Prepare / Act
    const alert = toAlert({ ...FINDING, summary }, HOST as Host);
    // Assess
    expect(alert.subject.length).toBeLessThanOrEqual(100);
    expect(alert.subject).toMatch(/^[\x20-\x7e]+$/);
  });

  it('says what, where, the numbers and what to do in the body', () => {
    // Prepare / Act
    const { body } = toAlert(FINDING, HOST as Host);
    // Assess
    for (const part of [
      'What: Xid 48 (double-bit ECC error)',
      'instance: i-0abc12345def67890 (p5.48xlarge)',
      'region: us-east-1, AZ us-east-1a',
      'Auto Scaling group: train-p5',
      'GPU: GPU 0000:19:00.0',
      'owner: team llm, job pretrain-7b',
      'xid: 48',
      'mnemonic: GPU_ECC_DBE',
      'What to do: Hardware fault',
      'First seen: 2024-11-15T12:02:03.470068+00:00',
    ]) {
      expect(body).toContain(part);
    }
  });

  it.each([
    [
      'with a team tag',
      HOST as Host,
      {
        severity: 'critical',
        rule: 'xid_fatal',
        instance_type: 'p5.48xlarge',
        status: 'firing',
        team: 'llm',
        job: 'pretrain-7b',
      },
    ],
    [
      'without tags',
      { instance_id: 'i-0abc12345def67890', instance_type: 'p5.48xlarge', region: 'us-east-1' } as Host,
      { severity: 'critical', rule: 'xid_fatal', instance_type: 'p5.48xlarge', status: 'firing' },
    ],
  ])('sets the message attributes %s', (_n, host, attributes) => {
    // Prepare / Act / Assess
    expect(toAlert(FINDING, host).attributes).toEqual(attributes);
  });

  it('says the Xid class in attribute xid_class, so a filter policy can keep application faults off on-call', () => {
    // Prepare
    const app: Finding = {
      ...FINDING,
      rule: 'xid_app',
      severity: 'info',
      action: 'notify',
      evidence: { xid: 13, xid_class: 'application' },
    };
    const host = {
      instance_id: 'i-0abc12345def67890',
      instance_type: 'p5.48xlarge',
      region: 'us-east-1',
    } as Host;
    // Act / Assess
    expect(toAlert(app, host).attributes).toMatchObject({ rule: 'xid_app', xid_class: 'application' });
  });
});

describe('toAsciiLine', () => {
  it('maps typographic characters and drops the rest to ?', () => {
    // Prepare / Act / Assess
    expect(toAsciiLine('a − b ≥ 3 × 2 … 熱\tx')).toBe('a - b >= 3 x 2 ... ? x');
  });
});
