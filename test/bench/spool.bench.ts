import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bench, describe } from 'vitest';
import { Spool } from '../../agent/spool/spool';
import { makeBatch } from '../agent/spool/spool-fixtures';

/**
 * Cost of the durable spool on this machine's tmpdir, fsync included: one 8-GPU batch (8 flush
 * windows with every metric, ~8 KB of JSON) appended (fdatasync) then acked (cursor write-tmp +
 * fsync + rename + fsync of the directory). Setup is top-level: vitest bench runs no beforeAll.
 */

const emptyDir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-spool-bench-'));
const backlogDir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-spool-bench-'));
/** Removes a bench's directory once its measured run is over (tinybench calls teardown without awaiting it). */
const removeAfterRun = (dir: string) => ({
  teardown: (_task: unknown, mode?: string) => {
    if (mode === 'run') rmSync(dir, { recursive: true, force: true });
  },
});

const empty = await Spool.open({ dir: emptyDir });
const backlog = await Spool.open({ dir: backlogDir });
let seq = 0;
await backlog.append(makeBatch(seq++, new Date(), 8));

describe('spool (fsync on the tmpdir)', () => {
  bench(
    'append + ack, empty spool (a segment created and deleted each time)',
    async () => {
      const batch = makeBatch(seq++, new Date(), 8);
      await empty.append(batch);
      await empty.ack(batch.batch_id);
    },
    removeAfterRun(emptyDir),
  );

  bench(
    'append + ack of the oldest, with a backlog (segment reused)',
    async () => {
      await backlog.append(makeBatch(seq++, new Date(), 8));
      const oldest = await backlog.peek();
      if (oldest) await backlog.ack(oldest.batch_id);
    },
    removeAfterRun(backlogDir),
  );
});
