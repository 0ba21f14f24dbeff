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

/** Waits until `check` holds (bounded by the test timeout); no timing is asserted. */
const until = async (check: () => boolean): Promise<void> => {
  while (!check()) await new Promise((r) => setTimeout(r, 5));
};

let dir: string;
let followers: KmsgFollower[];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kmsg-follower-'));
  followers = [];
});

afterEach(async () => {
  for (const f of followers) await f.stop();
  rmSync(dir, { recursive: true, force: true });
});

const follow = (path: string, events: GpuEvent[], warnings: string[] = [], extra = {}): KmsgFollower => {
  const f = new KmsgFollower({
    path,
    bootTime: BOOT,
    pollIntervalMs: 5,
    onXid: (e) => events.push(e),
    onWarning: (m) => warnings.push(m),
    ...extra,
  });
  followers.push(f);
  return f;
};

describe('KmsgFollower', () => {
  it('reports raw kmsg records written to a FIFO as they arrive, with boot-relative times', async () => {
    // Prepare
    const fifo = join(dir, 'kmsg');
    execFileSync('mkfifo', [fifo]);
    const events: GpuEvent[] = [];
    const follower = follow(fifo, events);
    expect(await follower.start()).toBe(true);
    const fd = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);

    // Act
    writeSync(fd, record(1, 5_000_000, 'nvidia-peermem: module loaded'));
    writeSync(fd, record(2, 3_600_123_456, XID79));
    await until(() => events.length === 1);
    const half = record(3, 3_601_000_000, XID94);
    writeSync(fd, half.slice(0, 30));
    writeSync(fd, half.slice(30));
    await until(() => events.length === 2);
    closeSync(fd);

    // Assess
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
    expect(follower.stats).toEqual({ lines: 3, xids: 2, overruns: 0 });
    for (const e of events) expect(EventSchema.safeParse(e).error).toBeUndefined();
  });

  it('reads the history of a file first, then lines appended to it', async () => {
    // Prepare
    const file = join(dir, 'kern.log');
    // The capture has no final newline; a log being written always ends its lines.
    appendFileSync(file, `${real('dmesg-xid48-63-94.iso.log').trimEnd()}\n`);
    const events: GpuEvent[] = [];
    const follower = follow(file, events);

    // Act
    await follower.start();
    await until(() => events.length === 11);
    appendFileSync(file, `2024-11-15T12:05:00,000001+00:00 ${XID79}\n`);
    await until(() => events.length === 12);

    // Assess
    expect(events.map((e) => e.xid)).toEqual([48, 63, 94, 94, 94, 94, 94, 94, 94, 94, 94, 79]);
    expect(events.at(-1)?.at).toBe('2024-11-15T12:05:00.000001Z');
    for (const e of events) expect(EventSchema.safeParse(e).error).toBeUndefined();
  });

  it('goes on after EPIPE (records overwritten) and warns once', async () => {
    // Prepare
    const reads: (string | 'EPIPE' | 'EAGAIN')[] = [
      'EPIPE',
      record(10, 1_000_000, XID79),
      'EPIPE',
      'EAGAIN',
      record(11, 2_000_000, XID94),
    ];
    const handle: KmsgHandle = {
      read: async (buffer) => {
        const next = reads.shift() ?? 'EAGAIN';
        if (next === 'EPIPE' || next === 'EAGAIN') throw Object.assign(new Error(next), { code: next });
        return { bytesRead: buffer.write(next) };
      },
      close: async () => {},
    };
    const events: GpuEvent[] = [];
    const warnings: string[] = [];
    const follower = follow('/dev/kmsg', events, warnings, { open: async () => handle });

    // Act
    await follower.start();
    await until(() => events.length === 2);

    // Assess
    expect(events.map((e) => e.xid)).toEqual([79, 94]);
    expect(follower.stats.overruns).toBe(2);
    expect(warnings).toHaveLength(1);
  });

  it('returns false and warns once when the log cannot be opened', async () => {
    // Prepare
    const warnings: string[] = [];
    const follower = follow(join(dir, 'no-such-kmsg'), [], warnings);

    // Act
    const started = [await follower.start(), await follower.start()];

    // Assess
    expect(started).toEqual([false, false]);
    expect(warnings).toHaveLength(1);
  });

  it.each([
    ['pollIntervalMs 0', { pollIntervalMs: 0 }],
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
