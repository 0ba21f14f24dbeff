import { describe, expect, it } from 'vitest';
import { attributeEventsToGpus, priceFor, storeRowsOf } from '../../../lambdas/domain';
import { flushWindow, HOST, makeBatch } from './batch-builder';

const PCI = '0000:19:00.0';
const price = priceFor('p5.48xlarge', 'us-east-1', undefined, 8);

/** Two GPUs' flush windows, GPU 1's horizon, and a kernel-log Xid that names only GPU 1's bus id. */
const batch = makeBatch({
  windows: [
    flushWindow(0, { sm_active: 0.5, compute_processes: 1 }),
    flushWindow(1, { sm_active: 0, compute_processes: 0 }, { pci: PCI }),
    flushWindow(
      1,
      { sm_active: 0, compute_processes: 0 },
      { pci: PCI, kind: 'horizon', start: '2026-03-10T09:45:10Z', end: '2026-03-10T10:00:10Z' },
    ),
  ],
  events: [{ at: '2026-03-10T10:00:05Z', kind: 'xid', xid: 79, pci_bus_id: PCI, source: 'kmsg' }],
});

describe('storeRowsOf', () => {
  it('carries a MIG slice window into its row, with its own diagnosis and its compute share of the price', () => {
    // Prepare: GPU 0 split; the batch's first flush window as instance 7 (1g.10gb)
    const [first, ...rest] = batch.windows;
    const mig = {
      ...batch,
      windows: [{ ...first!, gpu_instance_id: 7, gpu_instance_profile: '1g.10gb' }, ...rest],
    };

    // Act
    const rows = storeRowsOf(mig, { price, broken: new Map(), diagnoses: new Map([['0/gi7', 'idle']]) });
    const whole = storeRowsOf(batch, { price, broken: new Map(), diagnoses: new Map() });

    // Assess
    expect(rows.gpu[0]).toMatchObject({ gpu_index: 0, gpu_instance_id: 7, gpu_instance_profile: '1g.10gb' });
    expect(rows.gpu[0]?.ledger.diagnosis).toBe('idle');
    expect(rows.gpu[0]?.ledger.cost_usd).toBeCloseTo((whole.gpu[0]?.ledger.cost_usd ?? 0) / 7, 12);
    expect(whole.gpu[0]?.gpu_instance_id).toBeUndefined();
  });

  it('writes one gpu_windows row per flush window with the host dimensions and the ledger, never the horizon', () => {
    // Act
    const rows = storeRowsOf(batch, { price, broken: new Map(), diagnoses: new Map([['1', 'idle']]) });

    // Assess
    expect(rows.gpu.map((r) => [r.gpu_index, r.time])).toEqual([
      [0, '2026-03-10T10:00:10Z'],
      [1, '2026-03-10T10:00:10Z'],
    ]);
    expect(rows.gpu[0]).toMatchObject({
      instance_id: HOST.instance_id,
      team: 'llm',
      job: 'pretrain-7b',
      seq: 1,
      ledger: { waste_class: 'underused', price_usd_per_hour: 55.04 },
    });
    expect(rows.gpu[0]?.ledger.diagnosis).toBeUndefined();
    expect(rows.gpu[1]?.ledger).toMatchObject({ waste_class: 'idle', diagnosis: 'idle' });
  });

  it("costs a GPU broken from its mark by its index or its bus id, and the rest of the instance's GPUs not", () => {
    // Act
    const rows = storeRowsOf(batch, {
      price,
      broken: new Map([[PCI, '2026-03-10T10:00:05Z']]),
      diagnoses: new Map(),
    });

    // Assess
    expect(rows.gpu.map((r) => r.ledger.waste_class)).toEqual(['underused', 'broken']);
    expect(rows.gpu[1]?.ledger.broken_usd).toBe(rows.gpu[1]?.ledger.cost_usd);
  });

  it('stores the events as attributed to their GPU (index and bus id)', () => {
    // Act
    const rows = storeRowsOf(attributeEventsToGpus(batch), {
      price,
      broken: new Map(),
      diagnoses: new Map(),
    });

    // Assess
    expect(rows.events).toEqual([
      expect.objectContaining({ kind: 'xid', xid: 79, gpu_index: 1, pci_bus_id: PCI, seq: 1 }),
    ]);
  });
});
