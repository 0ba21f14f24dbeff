import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { composeAgent } from '../../agent/compose-agent';
import type { AgentSource } from '../../agent/sources/source';
import { type Batch, type GpuIdentity, type Host, parseBatch } from '../../lambdas/contract';
import { fakeGpuSource } from './fixtures/agent-sources';

const HOST: Host = { instance_id: 'i-0abc12345def67890', instance_type: 'p5.48xlarge', region: 'us-east-1' };
const AGENT = { version: 'test', profiling_source: 'none' as const };
const GPUS: GpuIdentity[] = [{ index: 0, uuid: 'GPU-aaaa', pci_bus_id: '0000:53:00.0' }];
/** Years before any day the suite runs: a part that read the wall clock would age, stamp or drop by it. */
const T0 = Date.parse('2020-02-03T04:05:06.000Z');

const dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-compose-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A clock the test moves by hand. */
function manualClock(): { now: () => Date; advance: (ms: number) => void } {
  let t = T0;
  return { now: () => new Date(t), advance: (ms) => (t += ms) };
}

/** One GPU reading a fixed value. */
function gpus(): AgentSource {
  return fakeGpuSource({
    gpus: GPUS,
    read: (now) => ({ gpus: [{ gpu_index: 0, at_ms: now.getTime(), gpu_util: 0.5 }] }),
  });
}

/** `close()` noted in `closed` under the source's name. */
function noting(source: AgentSource, closed: string[]): AgentSource {
  return { ...source, close: () => void closed.push(source.name) };
}

describe('composeAgent', () => {
  it('takes all its time from the clock it is given: a spooled agent on a clock years back keeps, sends and stamps every batch by it', async () => {
    // Prepare: a spool that aged batches by the wall clock would drop them all (72 h bound)
    const clock = manualClock();
    const sent: Batch[] = [];
    const agent = await composeAgent({
      sources: [gpus()],
      host: () => HOST,
      agent: () => AGENT,
      clock: clock.now,
      cadence: { sendIntervalS: 0 },
      delivery: {
        kind: 'spool',
        spool: { dir: join(dir, 'clock') },
        send: () => async (batch) => void sent.push(batch),
      },
    });

    // Act: an event reported at the injected time, then two 10 s windows
    agent.emit({ at: clock.now().toISOString(), kind: 'agent_start', source: 'agent' });
    for (let w = 0; w < 2; w++) {
      for (let i = 0; i < 10; i++) {
        clock.advance(1000);
        agent.loop.poll();
      }
      await agent.loop.flush();
      await agent.loop.settle();
    }
    await agent.close();

    // Assess
    expect(sent.map((b) => b.sent_at)).toEqual(['2020-02-03T04:05:16.000Z', '2020-02-03T04:05:26.000Z']);
    expect(sent[0]?.events).toEqual([
      expect.objectContaining({ kind: 'agent_start', at: '2020-02-03T04:05:06.000Z' }),
    ]);
    for (const batch of sent)
      expect(() => parseBatch(JSON.parse(JSON.stringify(batch)), clock.now())).not.toThrow();
    expect(agent.loop.pendingCount).toBe(0);
  });

  it('continues seq from the last batch its spool saw, so a restart leaves no false gap', async () => {
    // Prepare: a first agent keeps three batches and cannot send them
    const clock = manualClock();
    const spool = { dir: join(dir, 'seq') };
    const down = () => async () => {
      throw new Error('API down');
    };
    const first = await composeAgent({
      sources: [gpus()],
      host: () => HOST,
      agent: () => AGENT,
      clock: clock.now,
      delivery: { kind: 'spool', spool, send: down },
    });
    for (let i = 0; i < 3; i++) {
      clock.advance(10_000);
      first.loop.poll();
      await first.loop.flush();
    }
    await first.close();

    // Act
    const second = await composeAgent({
      sources: [gpus()],
      host: () => HOST,
      agent: () => AGENT,
      clock: clock.now,
      delivery: { kind: 'spool', spool, send: down },
    });
    const nextSeq = second.nextSeq;
    const pending = second.loop.pendingCount;
    await second.close();

    // Assess
    expect(nextSeq).toBe(3);
    expect(pending).toBe(3);
  });

  it('keeps every batch in memory, in order from startSeq, when delivery is memory', async () => {
    // Prepare
    const clock = manualClock();
    const agent = await composeAgent({
      sources: [gpus()],
      host: () => HOST,
      agent: () => AGENT,
      clock: clock.now,
      delivery: { kind: 'memory', startSeq: 40 },
    });

    // Act
    for (let i = 0; i < 3; i++) {
      clock.advance(10_000);
      agent.loop.poll();
      await agent.loop.flush();
    }
    await agent.close();

    // Assess
    expect(agent.batches.map((b) => b.seq)).toEqual([40, 41, 42]);
    expect(agent.nextSeq).toBe(43);
  });

  it('drops an event older than the API accepts, says so once, and keeps the others', async () => {
    // Prepare
    const clock = manualClock();
    const warnings: string[] = [];
    const agent = await composeAgent({
      sources: [gpus()],
      host: () => HOST,
      agent: () => AGENT,
      clock: clock.now,
      delivery: { kind: 'memory' },
      warn: (message) => warnings.push(message),
    });
    const old = new Date(T0 - 8 * 86_400_000).toISOString();

    // Act
    agent.emit({ at: old, kind: 'xid', xid: 13, source: 'kmsg' });
    agent.emit({ at: old, kind: 'xid', xid: 31, source: 'kmsg' });
    agent.emit({ at: clock.now().toISOString(), kind: 'xid', xid: 43, source: 'kmsg' });
    clock.advance(1000);
    agent.loop.poll();
    await agent.loop.flush();
    await agent.close();

    // Assess
    expect(agent.batches.flatMap((b) => b.events ?? []).map((e) => e.xid)).toEqual([43]);
    expect(warnings).toEqual(['event outside the API time window dropped']);
  });

  it('closes every source it opened when the host cannot be resolved, and throws that error', async () => {
    // Prepare
    const closed: string[] = [];
    const failure = new RangeError('no identity');

    // Act
    const error = await composeAgent({
      sources: [noting(gpus(), closed), noting({ ...gpus(), name: 'second' }, closed)],
      host: () => Promise.reject(failure),
      agent: () => AGENT,
      clock: manualClock().now,
      delivery: { kind: 'memory' },
    }).catch((e: unknown) => e);

    // Assess
    expect(error).toBe(failure);
    expect(closed).toEqual(['second', 'fake-gpus']);
  });
});
