import { existsSync } from 'node:fs';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SendRejectedError } from '../../../agent/errors';
import { REJECTED_DIR } from '../../../agent/spool/constants';
import { Spool } from '../../../agent/spool/spool';
import { LEGACY_EFA_RETRY_DRAINS, SpoolingSender } from '../../../agent/spool/spooling-sender';
import {
  type Batch,
  type EfaWindow,
  LEGACY_MAX_EFA_PORTS_PER_BATCH,
  MAX_EFA_PORTS_PER_BATCH,
  parseBatch,
} from '../../../lambdas/contract';
import { FakeClock, makeBatch, makeTempDir, T0 } from './spool-fixtures';

/**
 * The agent against a stack deployed before `efa[]` was sized per window (64 entries a batch): a
 * merged request over 64 is refused with 400 at `efa`, and the agent sends the same batches again
 * within 64, loses nothing and holds nothing.
 */

let dir: string;
let remove: () => Promise<void>;
let spool: Spool;

beforeEach(async () => {
  ({ dir, remove } = await makeTempDir());
  spool = await Spool.open({ dir, clock: new FakeClock().now });
});

afterEach(async () => {
  await spool.close();
  await remove();
});

/** Spooled batch `seq` of a p5: 8 GPU flush windows and `ports` EFA entries ending at T0 + seq × 10 s. */
function p5At(seq: number, ports: number = LEGACY_MAX_EFA_PORTS_PER_BATCH): Batch {
  const at = new Date(T0.getTime() + seq * 10_000);
  const efa: EfaWindow[] = Array.from({ length: ports }, (_, i) => ({
    start: new Date(at.getTime() - 10_000).toISOString(),
    end: at.toISOString(),
    device: `rdmap${79 + (i >> 1)}s0`,
    port: i % 2,
    deltas: { tx_pkts: 1_664_737, rx_pkts: 1_664_737, rx_drops: 0 },
  }));
  return { ...makeBatch(seq, at, 8), efa };
}

/** The seqs a (merged) request carries, from its EFA entries' ends. */
function membersOf(request: Batch): number[] {
  const ends = new Set((request.efa ?? []).map((e) => Date.parse(e.end)));
  return [...ends].map((ms) => (ms - T0.getTime()) / 10_000);
}

/**
 * An API that validates as today's does, and, while `legacy`, refuses more than 64 EFA entries as
 * a stack of the previous version answered: `400 {"error": "efa: Too big: …", "path": "efa"}`.
 */
class ApiOfVersion {
  legacy = true;
  readonly requests: { seqs: number[]; efa: number; status: number }[] = [];
  readonly send = async (batch: Batch): Promise<unknown> => {
    parseBatch(JSON.parse(JSON.stringify(batch)), new Date(T0.getTime() + 3600_000));
    const efa = batch.efa?.length ?? 0;
    const refused = this.legacy && efa > LEGACY_MAX_EFA_PORTS_PER_BATCH;
    this.requests.push({ seqs: membersOf(batch), efa, status: refused ? 400 : 202 });
    if (refused)
      throw new SendRejectedError(batch.batch_id, 400, {
        error: `efa: Too big: expected array to have <=${LEGACY_MAX_EFA_PORTS_PER_BATCH} items`,
        path: 'efa',
      });
    return { status: 202, accepted: batch.windows.length };
  };
}

async function rejectedFiles(): Promise<string[]> {
  const path = join(dir, REJECTED_DIR);
  return existsSync(path) ? readdir(path) : [];
}

describe('SpoolingSender against an older stack', () => {
  it('merges a minute of p5 windows into one request for a stack of this version', async () => {
    // Prepare
    const api = new ApiOfVersion();
    api.legacy = false;
    const sender = new SpoolingSender({ spool, send: api.send });
    for (let seq = 0; seq < 6; seq++) await sender.append(p5At(seq));

    // Act
    const result = await sender.drain();

    // Assess
    expect(api.requests).toEqual([{ seqs: [0, 1, 2, 3, 4, 5], efa: 384, status: 202 }]);
    expect(result).toMatchObject({ sent: 6, requests: 1, rejected: 0, remaining: 0 });
    expect(sender.efaPortsPerRequest).toBe(MAX_EFA_PORTS_PER_BATCH);
  });

  it('sends a merged request refused at `efa` again within 64 entries, quarantines nothing and warns once', async () => {
    // Prepare
    const api = new ApiOfVersion();
    const warnings: string[] = [];
    const sender = new SpoolingSender({ spool, send: api.send, onWarning: (m) => warnings.push(m) });
    for (let seq = 0; seq < 6; seq++) await sender.append(p5At(seq));

    // Act
    const first = await sender.drain();
    for (let seq = 6; seq < 12; seq++) await sender.append(p5At(seq));
    const second = await sender.drain();

    // Assess: one refused request, then one window per request; the next minute is not refused again
    expect(api.requests.map((r) => [r.seqs.length, r.status])).toEqual([
      [6, 400],
      ...Array(12).fill([1, 202]),
    ]);
    expect(api.requests.filter((r) => r.status === 202).flatMap((r) => r.seqs)).toEqual([
      ...Array(12).keys(),
    ]);
    expect(first).toMatchObject({ sent: 6, requests: 6, rejected: 0, held: 0, remaining: 0 });
    expect(second).toMatchObject({ sent: 6, requests: 6, rejected: 0, remaining: 0 });
    expect(first.error).toBeUndefined();
    expect(sender.counters).toMatchObject({ sent: 12, rejected: 0, dropped: 0 });
    expect(await rejectedFiles()).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/refused 384 EFA entries.*at most 64.*nothing lost.*Update the stack/);
    expect(sender.efaPortsPerRequest).toBe(LEGACY_MAX_EFA_PORTS_PER_BATCH);
    expect(sender.takeDroppedEvent(T0)).toBeUndefined();
  });

  it(`tries the contract's limit again after ${LEGACY_EFA_RETRY_DRAINS} drains, and merges once the stack is updated`, async () => {
    // Prepare: fall back once
    const api = new ApiOfVersion();
    const sender = new SpoolingSender({ spool, send: api.send });
    for (let seq = 0; seq < 2; seq++) await sender.append(p5At(seq));
    await sender.drain();
    api.legacy = false; // the stack is updated
    let seq = 2;

    // Act: drains within 64 until the retry is due, then a merged one
    for (let i = 1; i < LEGACY_EFA_RETRY_DRAINS; i++) {
      await sender.append(p5At(seq++));
      await sender.append(p5At(seq++));
      await sender.drain();
    }
    const before = sender.efaPortsPerRequest;
    api.requests.length = 0;
    await sender.append(p5At(seq++));
    await sender.append(p5At(seq++));
    await sender.drain();

    // Assess
    expect(before).toBe(LEGACY_MAX_EFA_PORTS_PER_BATCH);
    expect(api.requests).toEqual([{ seqs: [seq - 2, seq - 1], efa: 128, status: 202 }]);
    expect(sender.efaPortsPerRequest).toBe(MAX_EFA_PORTS_PER_BATCH);
  });

  it.each<[string, () => Batch[], SendRejectedError]>([
    [
      'a 400 at `efa` for a request within 64 entries (the batch itself is wrong)',
      () => [p5At(0, 2), p5At(1, 2)],
      new SendRejectedError('x', 400, { error: 'efa: expected array', path: 'efa' }),
    ],
    [
      'a 400 at an EFA entry (not the count)',
      () => [p5At(0), p5At(1)],
      new SendRejectedError('x', 400, { error: 'efa[3].port: Too big', path: 'efa[3].port' }),
    ],
  ])(
    'treats %s as any refusal: one batch at a time, the refused one quarantined',
    async (_name, batches, refusal) => {
      // Prepare: the API refuses every request carrying seq 1
      const requests: number[][] = [];
      const send = async (batch: Batch): Promise<unknown> => {
        const seqs = membersOf(batch);
        requests.push(seqs);
        if (seqs.includes(1)) throw refusal;
        return { status: 202, accepted: 1 };
      };
      const sender = new SpoolingSender({ spool, send });
      for (const b of batches()) await sender.append(b);

      // Act
      const result = await sender.drain();

      // Assess
      expect(requests).toEqual([[0, 1], [0], [1]]);
      expect(result).toMatchObject({ sent: 1, rejected: 1, remaining: 0 });
      expect(sender.efaPortsPerRequest).toBe(MAX_EFA_PORTS_PER_BATCH);
      expect(await rejectedFiles()).toHaveLength(1);
    },
  );
});
