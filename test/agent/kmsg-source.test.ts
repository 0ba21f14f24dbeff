import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KmsgSource } from '../../agent/sources/kmsg-source';
import { NODE_TIMERS, type SampleSink, type SourceContext } from '../../agent/sources/source';
import type { GpuEvent } from '../../lambdas/contract';

const XID79 = "NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
const XID94 = 'NVRM: Xid (PCI:0000:19:00): 94, pid=1248209, name=python3.10, Ch 00000008';
/** A sink that must stay untouched: the kernel log writes no readings. */
const NO_READINGS: SampleSink = {
  gpu: () => expect.unreachable('no GPU reading'),
  row: () => expect.unreachable('no GPU row'),
  overlay: () => expect.unreachable('no overlay'),
  event: () => expect.unreachable('events go through emit'),
  error: () => expect.unreachable('no error'),
};

let dir: string;
let source: KmsgSource | undefined;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kmsg-source-'));
});

afterEach(async () => {
  await source?.close();
  rmSync(dir, { recursive: true, force: true });
});

const context = (events: GpuEvent[], warnings: string[] = []): SourceContext => ({
  clock: () => new Date('2026-11-23T18:00:00Z'),
  emit: (e) => events.push(e),
  warn: (m) => warnings.push(m),
  timers: NODE_TIMERS,
});

describe('KmsgSource', () => {
  it('emits the history at open, then what was logged since at each poll, with no timer of its own', () => {
    // Prepare
    const log = join(dir, 'kern.log');
    const procStat = join(dir, 'stat');
    writeFileSync(procStat, 'cpu  1 2 3\nbtime 1795238095\n');
    writeFileSync(log, `2026-11-23T17:00:00,000001+00:00 ${XID79}\n`);
    const events: GpuEvent[] = [];
    source = new KmsgSource({ path: log, procStatPath: procStat });

    // Act
    const support = source.open(context(events));
    const atOpen = events.length;
    source.sample(NO_READINGS, new Date());
    const idlePoll = events.length;
    appendFileSync(log, `2026-11-23T17:59:59,500000+00:00 ${XID94}\n`);
    source.sample(NO_READINGS, new Date());

    // Assess
    expect(support).toEqual({ supported: true, detail: 'read at each poll' });
    // The Xid 79 line is an Xid and says the GPU is gone: an xid and a gpu_lost event.
    expect([atOpen, idlePoll]).toEqual([2, 2]);
    expect(events.map((e) => [e.kind, e.xid, e.source, e.at])).toEqual([
      ['xid', 79, 'kmsg', '2026-11-23T17:00:00.000001Z'],
      ['gpu_lost', undefined, 'kmsg', '2026-11-23T17:00:00.000001Z'],
      ['xid', 94, 'kmsg', '2026-11-23T17:59:59.500000Z'],
    ]);
  });

  it('emits a record logged to a kmsg-like FIFO as it comes, without a poll, and polls then read nothing', async () => {
    // Prepare
    const log = join(dir, 'kmsg');
    execFileSync('mkfifo', [log]);
    const procStat = join(dir, 'stat');
    writeFileSync(procStat, 'cpu  1 2 3\nbtime 1795238095\n');
    const events: GpuEvent[] = [];
    source = new KmsgSource({ path: log, procStatPath: procStat });
    const support = source.open(context(events));
    const writer = openSync(log, constants.O_WRONLY | constants.O_NONBLOCK);

    // Act
    writeSync(writer, `4,7,1000000,-;${XID94}\n`);
    const t0 = performance.now();
    while (events.length === 0 && performance.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 2));
    source.sample(NO_READINGS, new Date());
    await source.close();
    closeSync(writer);

    // Assess
    expect(support).toEqual({ supported: true, detail: 'read as records come' });
    expect(events.map((e) => [e.kind, e.xid, e.source, e.at])).toEqual([
      ['xid', 94, 'kmsg', '2026-11-21T05:14:56.000000Z'],
    ]);
    expect(performance.now() - t0).toBeLessThan(2000);
  });

  it.each([
    ['the boot time is unknown', 'cpu  1 2 3\n', 'kern.log', /boot time unknown/],
    ['the log cannot be opened', 'btime 1795238095\n', 'no-such-log', /cannot open/],
  ])('is unsupported when %s, and its polls do nothing', (_name, stat, logName, reason) => {
    // Prepare
    const procStat = join(dir, 'stat');
    writeFileSync(procStat, stat);
    writeFileSync(join(dir, 'kern.log'), `2026-11-23T17:00:00,000001+00:00 ${XID79}\n`);
    const events: GpuEvent[] = [];
    source = new KmsgSource({ path: join(dir, logName), procStatPath: procStat });

    // Act
    const support = source.open(context(events));
    source.sample(NO_READINGS, new Date());

    // Assess
    expect(support.supported).toBe(false);
    expect(support.supported === false && support.reason).toMatch(reason);
    expect(events).toEqual([]);
  });
});
