import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT, gpuLostRule } from '../../../../lambdas/domain';
import { makeBatch, NOW } from '../batch-builder';

describe('gpu_lost', () => {
  it('fires one critical replace per GPU with the count and first time', () => {
    // Prepare
    const batch = makeBatch({
      events: [
        { at: '2026-03-10T10:00:08Z', kind: 'gpu_lost', gpu_index: 6, source: 'nvml', detail: 'GPU_IS_LOST' },
        { at: '2026-03-10T10:00:02Z', kind: 'gpu_lost', gpu_index: 6, source: 'nvml' },
        { at: '2026-03-10T10:00:03Z', kind: 'gpu_lost', pci_bus_id: '0000:97:00.0', source: 'kmsg' },
      ],
    });
    // Act
    const findings = gpuLostRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(
      findings.map((f) => [f.gpu_index, f.pci_bus_id, f.severity, f.action, f.at, f.evidence.count]),
    ).toEqual([
      [6, undefined, 'critical', 'replace', '2026-03-10T10:00:02Z', 2],
      [undefined, '0000:97:00.0', 'critical', 'replace', '2026-03-10T10:00:03Z', 1],
    ]);
  });

  it('names the causes and judges a loss that names no GPU as the whole instance', () => {
    // Prepare: the kernel log's lines of a DGX A100 (NV_ERR_GPU_IS_LOST, no PCI id) and a fatal SXid
    const batch = makeBatch({
      events: [
        {
          at: '2026-03-10T10:00:02Z',
          kind: 'gpu_lost',
          source: 'kmsg',
          detail:
            'gpu_is_lost: NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST]',
        },
        {
          at: '2026-03-10T10:00:05Z',
          kind: 'gpu_lost',
          source: 'kmsg',
          detail:
            'nvswitch_fatal: nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up',
        },
      ],
    });
    // Act
    const [finding, ...rest] = gpuLostRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings;
    // Assess
    expect(rest).toEqual([]);
    expect(finding?.gpu_index).toBeUndefined();
    expect(finding?.pci_bus_id).toBeUndefined();
    expect(finding?.action).toBe('replace');
    expect(finding?.evidence.causes).toBe('gpu_is_lost,nvswitch_fatal');
    expect(finding?.summary).toContain('(gpu_is_lost, nvswitch_fatal), 2 event(s)');
  });

  it('ignores other events', () => {
    // Prepare
    const batch = makeBatch({
      events: [{ at: '2026-03-10T10:00:02Z', kind: 'agent_start', source: 'agent' }],
    });
    // Act / Assess
    expect(gpuLostRule.evaluate(batch, DEFAULT_RULE_CONTEXT, NOW).findings).toEqual([]);
  });
});
