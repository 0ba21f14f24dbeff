import { stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { heldPastBounds, listHeld, readHeld, writeHeld } from '../../../agent/spool/held-batches';
import { makeBatch, makeTempDir, T0 } from './spool-fixtures';

let dir: string;
let remove: () => Promise<void>;

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir('gpu-sentinel-held-'));
});

afterEach(async () => {
  await remove();
});

const REASON = { message: 'refused', status: 403 };

async function hold(seq: number, atMs: number): Promise<void> {
  await writeHeld(dir, makeBatch(seq, new Date(atMs), 8), atMs, 8, REASON, T0);
}

describe('held batches', () => {
  it('lists them lowest seq first from their names alone, ignores other files, and reads one back', async () => {
    // Prepare
    await hold(12, T0.getTime());
    await hold(3, T0.getTime() + 1000);
    await writeFile(join(dir, 'notes.txt'), 'not a held batch');

    // Act
    const held = await listHeld(dir);
    const batch = await readHeld(held[0] as (typeof held)[number]);

    // Assess
    expect(held.map((h) => [h.seq, h.atMs, h.windows])).toEqual([
      [3, T0.getTime() + 1000, 8],
      [12, T0.getTime(), 8],
    ]);
    expect(batch?.seq).toBe(3);
    expect(await listHeld(join(dir, 'missing'))).toEqual([]);
  });

  it('reads a damaged file as no batch', async () => {
    // Prepare
    await hold(1, T0.getTime());
    const [held] = await listHeld(dir);
    await writeFile(held?.file ?? '', '{"batch": {"seq": 1');

    // Act / Assess
    expect(await readHeld(held as NonNullable<typeof held>)).toBeUndefined();
  });

  it('puts past the bounds those older than the cutoff, then the lowest seq until the bytes fit', async () => {
    // Prepare: 4 batches of one size; seq 0 older than the cutoff
    for (let seq = 0; seq < 4; seq++) await hold(seq, T0.getTime() + seq * 10_000);
    const held = await listHeld(dir);
    const one = await stat(held[1]?.file ?? '');

    // Act
    const past = await heldPastBounds(held, T0.getTime() + 5000, 2 * one.size);

    // Assess: seq 0 by age; of 1..3 (3 files) only 2 fit, so seq 1 goes too
    expect(past.map((h) => h.seq)).toEqual([0, 1]);
  });
});
