import { copyFile, mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { composeAgent } from '../../agent/compose-agent';
import { type ScannedRecord, scanSegment } from '../../agent/spool/segment-format';
import { Spool } from '../../agent/spool/spool';
import type { Batch, Host } from '../../lambdas/contract';
import { fakeGpuSource } from '../agent/fixtures/agent-sources';
import { makeBatch, makeTempDir, T0 } from '../agent/spool/spool-fixtures';

/**
 * Damage to the tail of the spool's last segment, after 5 batches were acknowledged by `append`:
 * the records were durably written, so what no longer reads back is lost and must be counted in
 * `data_dropped` exactly, and the agent's next `seq` must start above every one of them.
 */

/** GPUs per saved batch: each carries this many flush windows. */
const GPUS = 8;
/** Batches saved before the damage. */
const SAVED = 5;
/** Disk page, bytes (what a bad sector or a lost page write zeroes). */
const PAGE_BYTES = 4096;
/** The host of `makeBatch`, so the agent's new batch merges with the spooled ones. */
const HOST: Host = { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' };

/** One kind of damage: changes the segment's bytes, and says which saved records it destroys. */
interface Damage {
  readonly name: string;
  readonly apply: (data: Buffer, records: readonly ScannedRecord[]) => Buffer;
}

function record(records: readonly ScannedRecord[], i: number): ScannedRecord {
  const r = records[i];
  if (!r) throw new Error(`no record ${i}`);
  return r;
}

const DAMAGES: readonly Damage[] = [
  {
    name: 'a flipped byte in the last record',
    apply: (data, records) => {
      const last = record(records, SAVED - 1);
      const at = last.offset + Math.floor(last.bytes / 2);
      data[at] = (data[at] ?? 0) ^ 0x40;
      return data;
    },
  },
  {
    name: "a flipped byte in the last record's length",
    apply: (data, records) => {
      const at = record(records, SAVED - 1).offset + 2;
      data[at] = (data[at] ?? 0) ^ 0x01;
      return data;
    },
  },
  {
    name: 'a truncation mid-record (the 4th)',
    apply: (data, records) => {
      const fourth = record(records, 3);
      return data.subarray(0, fourth.offset + Math.floor(fourth.bytes / 2));
    },
  },
  {
    name: 'a zeroed page holding the last record',
    apply: (data, records) => {
      const page = Math.floor(record(records, SAVED - 1).offset / PAGE_BYTES) * PAGE_BYTES;
      data.fill(0, page, Math.min(page + PAGE_BYTES, data.length));
      return data;
    },
  },
  {
    name: 'the segment truncated to its header',
    apply: (data) => data.subarray(0, 8),
  },
];

let root: string;
let removeRoot: () => Promise<void>;
let template: string;
let segmentName: string;
let segment: Buffer;
let records: readonly ScannedRecord[];
const figures: string[] = [];

beforeAll(async () => {
  ({ dir: root, remove: removeRoot } = await makeTempDir('gpu-sentinel-chaos-tail-'));
  template = join(root, 'template');
  const spool = await Spool.open({ dir: template, clock: () => T0 });
  for (let seq = 0; seq < SAVED; seq += 1)
    await spool.append(makeBatch(seq, new Date(T0.getTime() - (SAVED - seq) * 10_000), GPUS));
  await spool.close();
  const names = (await readdir(template)).filter((n) => n.endsWith('.seg'));
  expect(names).toHaveLength(1);
  segmentName = names[0] as string;
  segment = await readFile(join(template, segmentName));
  records = scanSegment(segmentName, segment).records;
  expect(records).toHaveLength(SAVED);
});

afterAll(async () => {
  console.log(`chaos spool tail damage (${SAVED} saved batches of ${GPUS} GPUs):\n  ${figures.join('\n  ')}`);
  await removeRoot();
});

/** Seqs of the saved batches whose record bytes differ (or are gone) after the damage. */
function destroyed(before: Buffer, after: Buffer): number[] {
  return records
    .map((r, seq) => ({ r, seq }))
    .filter(
      ({ r }) =>
        !before.subarray(r.offset, r.offset + r.bytes).equals(after.subarray(r.offset, r.offset + r.bytes)),
    )
    .map(({ seq }) => seq);
}

describe('chaos: spool tail damage', () => {
  it.each(DAMAGES)(
    'counts every window $name lost in data_dropped and reuses no seq',
    async ({ name, apply }) => {
      // Prepare: the saved spool, copied, its segment damaged
      const run = join(root, name.replace(/\W+/g, '-'));
      await mkdir(run);
      for (const file of await readdir(template)) await copyFile(join(template, file), join(run, file));
      const damaged = apply(Buffer.from(segment), records);
      await writeFile(join(run, segmentName), damaged);
      const lost = destroyed(segment, damaged);
      let now = T0.getTime();
      const sent: Batch[] = [];

      // Act: the agent restarts on the damaged spool, then sends one window
      const agent = await composeAgent({
        sources: [
          fakeGpuSource({
            gpus: [{ index: 0, uuid: 'GPU-aaaa', pci_bus_id: '0000:53:00.0' }],
            read: (at) => ({ gpus: [{ gpu_index: 0, at_ms: at.getTime(), gpu_util: 0.5 }] }),
          }),
        ],
        host: () => HOST,
        agent: () => ({ version: 'test', profiling_source: 'none' }),
        clock: () => new Date(now),
        cadence: { sendIntervalS: 0 },
        delivery: { kind: 'spool', spool: { dir: run }, send: () => async (b) => void sent.push(b) },
      });
      const nextSeq = agent.nextSeq;
      for (let i = 0; i < 10; i += 1) {
        now += 1000;
        agent.loop.poll();
      }
      await agent.loop.flush();
      await agent.loop.settle();
      await agent.close();

      // Assess
      const delivered = [
        ...new Set(
          sent.flatMap((b) =>
            b.windows
              .filter((w) => w.gpu.uuid !== 'GPU-aaaa')
              .map((w) => SAVED - (T0.getTime() - Date.parse(w.end)) / 10_000),
          ),
        ),
      ].sort((a, b) => a - b);
      const reported = sent
        .flatMap((b) => b.events ?? [])
        .filter((e) => e.kind === 'data_dropped')
        .reduce((sum, e) => sum + (e.count ?? 0), 0);
      const seqs = sent.map((b) => b.seq);
      figures.push(
        `${name}: batches destroyed ${lost.length} (seq ${lost.join(',')}), delivered ${delivered.length}, windows reported lost ${reported}, next seq ${nextSeq}`,
      );
      expect(lost.length).toBeGreaterThan(0);
      expect(delivered).toEqual(Array.from({ length: SAVED }, (_, s) => s).filter((s) => !lost.includes(s)));
      expect(reported).toBe(lost.length * GPUS);
      expect(nextSeq).toBe(SAVED);
      expect(seqs.filter((s) => lost.includes(s))).toEqual([]);
    },
  );
});
