import { afterEach, describe, expect, it, vi } from 'vitest';
import { gpuWindowJson } from '../../../lambdas/adapters/firehose-records';
import { firehoseJsonKey } from '../../../lambdas/domain/firehose-json-keys';
import { GPU_METRIC_NAMES, LEDGER_FIELD_NAMES } from '../../../lambdas/domain/measure-types';
import { gpuInstanceSlot } from '../../../lambdas/domain/store-columns';
import type { GpuWindowRow } from '../../../lambdas/domain/types';
import { refuseCodeGeneration } from '../../setup/refuse-code-generation';
import { gpuRow, ledger } from '../rows';

/**
 * The row as `JSON.stringify` writes the documented object: identity columns (the MIG slice's
 * included: `gpu_instance_slot` is −1 for a whole GPU), then metrics and
 * ledger fields in their lists' order, `undefined` left out, non-finite numbers `null`, times in epoch ms,
 * each column under its Firehose JSON key.
 */
function reference(row: GpuWindowRow): string {
  const ms = (iso: string): number => Date.parse(iso);
  const metrics = row.metrics as Readonly<Record<string, unknown>>;
  const entry = row.ledger as unknown as Readonly<Record<string, unknown>>;
  const columns: Record<string, unknown> = {
    time: ms(row.time),
    start: ms(row.start),
    instance_id: row.instance_id,
    instance_type: row.instance_type,
    region: row.region,
    az: row.az,
    gpu_index: row.gpu_index,
    gpu_uuid: row.gpu_uuid,
    gpu_name: row.gpu_name,
    gpu_instance_id: row.gpu_instance_id,
    gpu_instance_profile: row.gpu_instance_profile,
    gpu_instance_slot: gpuInstanceSlot(row),
    team: row.team,
    job: row.job,
    namespace: row.namespace,
    pod: row.pod,
    container: row.container,
    batch_id: row.batch_id,
    seq: row.seq,
    ...Object.fromEntries(GPU_METRIC_NAMES.map((n) => [n, metrics[n]])),
    ...Object.fromEntries(LEDGER_FIELD_NAMES.map((n) => [n, entry[n]])),
  };
  return JSON.stringify(
    Object.fromEntries(Object.entries(columns).map(([n, v]) => [firehoseJsonKey('gpu_windows', n), v])),
  );
}

describe('gpuWindowJson', () => {
  it.each<[string, GpuWindowRow]>([
    ['a full row', gpuRow({ namespace: 'ml', pod: 'train-0', container: 'main' })],
    ['a MIG slice', gpuRow({ gpu_instance_id: 7, gpu_instance_profile: '1g.10gb' })],
    [
      'a row without the optional identity columns',
      { ...gpuRow(), az: undefined, team: undefined, job: undefined },
    ],
    [
      'strings that need escaping and a time with an offset',
      gpuRow({
        time: '2026-03-10T13:00:10+01:00',
        gpu_name: 'NVIDIA "H100"\\\n\u00e9\u2028',
        team: 'équipe \u{1F680}',
      }),
    ],
    [
      'non-finite numbers and booleans',
      gpuRow({
        metrics: { gpu_util: Number.NaN, power_w: Number.POSITIVE_INFINITY, remapped_rows_pending: true },
        ledger: ledger({ cost_usd: Number.NEGATIVE_INFINITY }),
      }),
    ],
  ])('writes %s as JSON.stringify writes it', (_name, row) => {
    expect(gpuWindowJson(row)).toBe(reference(row));
    // Again: the second row of a batch reuses the strings the first one quoted
    expect(gpuWindowJson(row)).toBe(reference(row));
  });

  it('stays right past the strings it remembers (thousands of batch ids and times)', () => {
    for (let i = 0; i < 3000; i++) {
      const row = gpuRow({
        batch_id: `0b7e6f7a-1f2b-4c3d-8e9f-${String(i).padStart(12, '0')}`,
        time: new Date(Date.parse('2026-03-10T12:00:10.000Z') + i * 10_000).toISOString(),
        gpu_index: i % 8,
      });
      expect(gpuWindowJson(row)).toBe(reference(row));
    }
  });

  describe('where the runtime refuses code generation (--disallow-code-generation-from-strings)', () => {
    afterEach(() => {
      vi.unstubAllGlobals();
      vi.resetModules();
    });

    it('writes the same text with the plain loop', async () => {
      const codeGeneration = refuseCodeGeneration();
      vi.resetModules();
      const fresh = await import('../../../lambdas/adapters/firehose-records');
      expect(codeGeneration.refused).toBeGreaterThan(0);
      for (const row of [
        gpuRow({ namespace: 'ml', pod: 'train-0', container: 'main' }),
        gpuRow({
          metrics: { gpu_util: Number.NaN, power_w: Number.POSITIVE_INFINITY, remapped_rows_pending: true },
          ledger: ledger({ cost_usd: Number.NEGATIVE_INFINITY }),
        }),
      ]) {
        expect(fresh.gpuWindowJson(row)).toBe(reference(row));
      }
    });
  });
});
