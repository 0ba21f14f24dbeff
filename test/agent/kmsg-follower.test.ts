import { execFileSync } from 'node:child_process';
import {
  appendFileSync,
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readFileSync,
  rmSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { bootTimeFromProcStat, KmsgFollower, type KmsgHandle } from '../../agent/sources/kmsg-follower';
import { EventSchema, type GpuEvent } from '../../lambdas/contract';

const real = (name: string): string =>
  readFileSync(new URL(`../fixtures/real/${name}`, import.meta.url), 'utf8');

const BOOT = new Date('2026-11-21T09:00:00Z');
const XID79 = "NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
const XID94 = 'NVRM: Xid (PCI:0000:19:00): 94, pid=1248209, name=python3.10, Ch 00000008';
/** A raw /dev/kmsg record with its continuation lines, as one read() returns it. */
const record = (seq: number, usec: number, message: string): string =>
  `4,${seq},${usec},-;${message}\n SUBSYSTEM=pci\n DEVICE=+pci:0000:19:00.0\n`;

let dir: string;
let followers: KmsgFollower[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kmsg-follower-'));
  followers = [];
});

afterEach(async () => {
  await Promise.all(followers.map((f) => f.stop()));
  rmSync(dir, { recursive: true, force: true });
});

const follow = (
  path: string,
  events: GpuEvent[],
  warnings: string[] = [],
  extra = {},
  lost: GpuEvent[] = [],
): KmsgFollower => {
  const f = new KmsgFollower({
    path,
    bootTime: BOOT,
    // The Xid tests read the Xid events; the gpu_lost events of Xid 79 lines are tested on their own.
    onXid: (e) => (e.kind === 'xid' ? events.push(e) : lost.push(e)),
    onWarning: (m) => warnings.push(m),
    ...extra,
  });
  followers.push(f);
  return f;
};

describe('KmsgFollower', () => {
  it('reports raw kmsg records written to a FIFO at the pump after they arrive, with boot-relative times', () => {
    // Prepare
    const fifo = join(dir, 'kmsg');
    execFileSync('mkfifo', [fifo]);
    const events: GpuEvent[] = [];
    const lost: GpuEvent[] = [];
    const follower = follow(fifo, events, [], {}, lost);
    expect(follower.start()).toBe(true);
    const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);

    // Act
    const idle = follower.pump();
    writeSync(fd, record(1, 5_000_000, 'nvidia-peermem: module loaded'));
    writeSync(fd, record(2, 3_600_123_456, XID79));
    follower.pump();
    const afterFirst = events.length;
    const half = record(3, 3_601_000_000, XID94);
    writeSync(fd, half.slice(0, 30));
    follower.pump();
    const afterHalf = events.length;
    writeSync(fd, half.slice(30));
    follower.pump();
    closeSync(fd);

    // Assess
    expect([idle, afterFirst, afterHalf]).toEqual([0, 1, 1]);
    expect(events).toEqual([
      {
        at: '2026-11-21T10:00:00.123456Z',
        kind: 'xid',
        source: 'kmsg',
        xid: 79,
        pci_bus_id: '0000:19:00.0',
        detail: 'GPU has fallen off the bus.',
      },
      {
        at: '2026-11-21T10:00:01.000000Z',
        kind: 'xid',
        source: 'kmsg',
        xid: 94,
        pci_bus_id: '0000:19:00.0',
        pid: 1248209,
        process_name: 'python3.10',
        detail: 'Ch 00000008',
      },
    ]);
    expect(follower.stats).toEqual({ lines: 3, xids: 2, gpuLost: 1, overruns: 0 });
    // The Xid 79 line also says the GPU is gone: one gpu_lost event of the same GPU and time.
    expect(lost).toEqual([
      {
        at: '2026-11-21T10:00:00.123456Z',
        kind: 'gpu_lost',
        source: 'kmsg',
        pci_bus_id: '0000:19:00.0',
        detail: expect.stringMatching(/^fallen_off_bus: NVRM: Xid \(PCI:0000:19:00\): 79/),
      },
    ]);
    for (const e of events) expect(EventSchema.safeParse(e).error).toBeUndefined();
  });

  it('follows a FIFO as kmsg: reports a record the moment it is written, with no pump, and stops at once', async () => {
    // Prepare: a FIFO with its writer kept open behaves as /dev/kmsg (EAGAIN when empty, poll(2) blocks)
    const fifo = join(dir, 'kmsg');
    execFileSync('mkfifo', [fifo]);
    const events: GpuEvent[] = [];
    const follower = follow(fifo, events);
    follower.start();
    const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);

    // Act
    const following = follower.follow();
    writeSync(fd, record(1, 3_600_123_456, XID79));
    const writtenAt = performance.now();
    while (events.length === 0 && performance.now() - writtenAt < 5000)
      await new Promise((r) => setTimeout(r, 2));
    const latencyMs = performance.now() - writtenAt;
    const stoppedAt = performance.now();
    await follower.stop();
    const stopMs = performance.now() - stoppedAt;
    closeSync(fd);

    // Assess
    expect([following, follower.following]).toEqual([true, false]);
    expect(events.map((e) => [e.kind, e.xid, e.at])).toEqual([['xid', 79, '2026-11-21T10:00:00.123456Z']]);
    // Not the owner's 1 s poll: the kernel wakes the wait (milliseconds; 500 ms leaves room for a loaded CI).
    expect(latencyMs).toBeLessThan(500);
    expect(stopMs).toBeLessThan(2000);
  });

  it('does not follow a regular file or an injected handle (they are read at each pump)', () => {
    // Prepare
    const file = join(dir, 'kern.log');
    appendFileSync(file, `2024-11-15T12:05:00,000001+00:00 ${XID79}\n`);
    const onFile = follow(file, []);
    const injected = follow('/dev/kmsg', [], [], { open: () => ({ read: () => 0, close: () => {} }) });

    // Act
    onFile.start();
    injected.start();

    // Assess
    expect([onFile.follow(), injected.follow(), onFile.following]).toEqual([false, false, false]);
  });

  it('reads the history of a file first, then lines appended to it', () => {
    // Prepare
    const file = join(dir, 'kern.log');
    // The capture has no final newline; a log being written always ends its lines.
    appendFileSync(file, `${real('dmesg-xid48-63-94.iso.log').trimEnd()}\n`);
    const events: GpuEvent[] = [];
    const follower = follow(file, events);

    // Act
    follower.start();
    follower.pump();
    const history = events.length;
    follower.pump();
    const idle = events.length;
    appendFileSync(file, `2024-11-15T12:05:00,000001+00:00 ${XID79}\n`);
    follower.pump();

    // Assess
    expect([history, idle]).toEqual([11, 11]);
    expect(events.map((e) => e.xid)).toEqual([48, 63, 94, 94, 94, 94, 94, 94, 94, 94, 94, 79]);
    expect(events.at(-1)?.at).toBe('2024-11-15T12:05:00.000001Z');
    for (const e of events) expect(EventSchema.safeParse(e).error).toBeUndefined();
  });

  it('goes on after EPIPE (records overwritten), stops at EAGAIN until the next pump, and warns once', () => {
    // Prepare
    const reads: (string | 'EPIPE' | 'EAGAIN')[] = [
      'EPIPE',
      record(10, 1_000_000, XID79),
      'EPIPE',
      'EAGAIN',
      record(11, 2_000_000, XID94),
    ];
    const handle: KmsgHandle = {
      read: (buffer) => {
        const next = reads.shift() ?? 'EAGAIN';
        if (next === 'EPIPE' || next === 'EAGAIN') throw Object.assign(new Error(next), { code: next });
        return buffer.write(next);
      },
      close: () => {},
    };
    const events: GpuEvent[] = [];
    const warnings: string[] = [];
    const follower = follow('/dev/kmsg', events, warnings, { open: () => handle });

    // Act
    follower.start();
    follower.pump();
    const beforeEagain = events.map((e) => e.xid);
    follower.pump();

    // Assess
    expect(beforeEagain).toEqual([79]);
    expect(events.map((e) => e.xid)).toEqual([79, 94]);
    expect(follower.stats.overruns).toBe(2);
    expect(warnings).toHaveLength(1);
  });

  it('reads at most maxReadsPerPump records per pump and goes on at the next', () => {
    // Prepare
    const reads = [record(20, 1_000_000, XID79), record(21, 2_000_000, XID94), record(22, 3_000_000, XID79)];
    const handle: KmsgHandle = {
      read: (buffer) => {
        const next = reads.shift();
        if (next === undefined) throw Object.assign(new Error('EAGAIN'), { code: 'EAGAIN' });
        return buffer.write(next);
      },
      close: () => {},
    };
    const events: GpuEvent[] = [];
    const follower = follow('/dev/kmsg', events, [], { open: () => handle, maxReadsPerPump: 2 });
    follower.start();

    // Act
    const counts = [follower.pump(), follower.pump(), follower.pump()];

    // Assess
    expect(counts).toEqual([2, 1, 0]);
    expect(events.map((e) => e.xid)).toEqual([79, 94, 79]);
  });

  it('returns false and warns once when the log cannot be opened, and its pump reads nothing', () => {
    // Prepare
    const warnings: string[] = [];
    const follower = follow(join(dir, 'no-such-kmsg'), [], warnings);

    // Act
    const started = [follower.start(), follower.start()];

    // Assess
    expect(started).toEqual([false, false]);
    expect(follower.pump()).toBe(0);
    expect(warnings).toHaveLength(1);
  });

  it.each([
    ['maxReadsPerPump 0', { maxReadsPerPump: 0 }],
    ['an invalid boot time', { bootTime: new Date(Number.NaN) }],
  ])('throws a RangeError for %s', (_name, bad) => {
    // Prepare / Act
    const act = () => new KmsgFollower({ bootTime: BOOT, onXid: () => {}, ...bad });

    // Assess
    expect(act).toThrow(RangeError);
  });
});

describe('bootTimeFromProcStat', () => {
  it.each([
    ['a /proc/stat', 'cpu  10 0 20 300\nintr 1 2\nctxt 99\nbtime 1795238095\nprocesses 7\n', 1795238095000],
    ['a btime line with trailing spaces', 'btime 1700000000  \n', 1700000000000],
    ['no btime line', 'cpu  10 0 20 300\n', undefined],
    ['a btime that is not a number', 'btime soon\n', undefined],
  ])('reads %s', (_name, text, expected) => {
    // Prepare / Act
    const boot = bootTimeFromProcStat(text);

    // Assess
    expect(boot?.getTime()).toBe(expected);
  });
});
