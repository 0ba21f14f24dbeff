import { readdir } from 'node:fs/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Spool } from '../../../agent/spool/spool';
import { appendThenKill, killAppendLoop } from './kill-fixture';
import { makeBatch, makeTempDir } from './spool-fixtures';

let dir: string;
let remove: () => Promise<void>;

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
});

afterEach(async () => {
  killAppendLoop();
  await remove();
});

describe('Spool after kill -9', () => {
  it.each([3, 40])(
    'keeps every acknowledged append intact and in order when killed after %i appends',
    async (appends) => {
      // Prepare
      const printed = await appendThenKill(dir, appends);
      const segments = (await readdir(dir)).filter((n) => n.endsWith('.seg'));

      // Act
      const spool = await Spool.open({ dir });
      const next = (spool.stats().last_seq ?? -1) + 1;
      await spool.append(makeBatch(next, new Date(), 8, true));
      const seqs: number[] = [];
      for (let batch = await spool.peek(); batch; batch = await spool.peek()) {
        seqs.push(batch.seq);
        await spool.ack(batch.batch_id);
      }
      const stats = spool.stats();
      await spool.close();

      // Assess
      expect(segments.length).toBeGreaterThanOrEqual(1);
      expect(printed.length).toBeGreaterThanOrEqual(appends);
      // The child may have completed one or a few appends it had no time to print.
      expect(next).toBeGreaterThanOrEqual(printed.length);
      expect(seqs).toEqual(Array.from({ length: next + 1 }, (_, seq) => seq));
      expect(stats).toMatchObject({ batches: 0, bytes: 0, dropped_total: 0 });
    },
  );
});
