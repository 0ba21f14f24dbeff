import { execFile, execFileSync } from 'node:child_process';
import {
  closeSync,
  constants,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { canWaitOn, FdWaiter } from '../../agent/sources/kmsg-wait';

let dir: string;
const fds: number[] = [];
const waiters: FdWaiter[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'kmsg-wait-'));
});

afterEach(async () => {
  await Promise.all(waiters.splice(0).map((w) => w.stop()));
  for (const fd of fds.splice(0)) closeSync(fd);
  rmSync(dir, { recursive: true, force: true });
});

/** A FIFO opened as the follower opens a log (read, non-blocking), and a writer kept open on it. */
const fifoPair = (): { reader: number; writer: number; path: string } => {
  const path = join(dir, `fifo-${fds.length}`);
  execFileSync('mkfifo', [path]);
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  fds.push(reader, writer);
  return { reader, writer, path };
};

/** Reads everything the descriptor holds now; the count of reads that returned data. */
const drain = (fd: number, into: string[]): number => {
  const buffer = Buffer.alloc(4096);
  let reads = 0;
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, buffer, 0, buffer.length, null);
    } catch {
      return reads;
    }
    if (n <= 0) return reads;
    reads++;
    into.push(buffer.toString('utf8', 0, n));
  }
};

const until = async (done: () => boolean, ms: number): Promise<void> => {
  const end = performance.now() + ms;
  while (!done() && performance.now() < end) await new Promise((r) => setTimeout(r, 2));
};

describe('FdWaiter', () => {
  it('calls onReady as soon as a record is written, with no poll of the owner', async () => {
    // Prepare
    const { reader, writer } = fifoPair();
    const got: string[] = [];
    let readyAt = 0;
    const waiter = FdWaiter.start({
      fd: reader,
      onReady: () => {
        readyAt = performance.now();
        return drain(reader, got);
      },
    });
    if (waiter) waiters.push(waiter);
    await new Promise((r) => setTimeout(r, 50));

    // Act
    const writtenAt = performance.now();
    writeSync(writer, '4,1,1,-;NVRM: Xid (PCI:0000:19:00): 79\n');
    await until(() => got.length > 0, 5000);

    // Assess
    expect(waiter?.running).toBe(true);
    expect(got).toEqual(['4,1,1,-;NVRM: Xid (PCI:0000:19:00): 79\n']);
    // The default 60 s timeout and 1 s pause play no part: the kernel wakes the wait.
    expect(readyAt - writtenAt).toBeLessThan(500);
  });

  it('batches a burst: at most one wake-up per minGapMs, every record read', async () => {
    // Prepare
    const { reader, writer } = fifoPair();
    const got: string[] = [];
    let calls = 0;
    const waiter = FdWaiter.start({
      fd: reader,
      minGapMs: 100,
      onReady: () => {
        calls++;
        return drain(reader, got);
      },
    });
    if (waiter) waiters.push(waiter);

    // Act: 50 records, one every 10 ms
    const t0 = performance.now();
    for (let i = 0; i < 50; i++) {
      writeSync(writer, `${i}\n`);
      await new Promise((r) => setTimeout(r, 10));
    }
    await until(() => got.join('').split('\n').length > 50, 5000);
    const elapsedMs = performance.now() - t0;

    // Assess: ≈ 0.5 s of records (longer on a loaded machine) in one wake-up per 100 ms, not 50
    expect(got.join('')).toBe(Array.from({ length: 50 }, (_, i) => `${i}\n`).join(''));
    expect(calls).toBeGreaterThanOrEqual(2);
    expect(calls).toBeLessThanOrEqual(Math.ceil(elapsedMs / 100) + 1);
    expect(calls).toBeLessThan(50);
  });

  it('stops at once while parked in poll(2), long before its timeout', async () => {
    // Prepare
    const { reader } = fifoPair();
    const waiter = FdWaiter.start({ fd: reader, onReady: () => 0, timeoutMs: 600_000 });
    await new Promise((r) => setTimeout(r, 50));

    // Act
    const t0 = performance.now();
    await waiter?.stop();
    const took = performance.now() - t0;

    // Assess
    expect(waiter?.running).toBe(false);
    expect(took).toBeLessThan(2000);
  });

  it('pauses after a wake-up that read nothing (a FIFO whose writer left), then reads a new writer', async () => {
    // Prepare: the writer leaves; poll(2) answers POLLHUP at once from then on
    const { reader, writer, path } = fifoPair();
    fds.splice(fds.indexOf(writer), 1);
    closeSync(writer);
    const got: string[] = [];
    let calls = 0;
    const waiter = FdWaiter.start({
      fd: reader,
      pauseMs: 100,
      onReady: () => {
        calls++;
        return drain(reader, got);
      },
    });
    if (waiter) waiters.push(waiter);

    // Act
    await new Promise((r) => setTimeout(r, 450));
    const idleCalls = calls;
    const again = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
    fds.push(again);
    writeSync(again, 'back\n');
    await until(() => got.length > 0, 5000);

    // Assess: about one wake-up per pause, not a hot loop
    expect(idleCalls).toBeGreaterThanOrEqual(1);
    expect(idleCalls).toBeLessThanOrEqual(6);
    expect(got).toEqual(['back\n']);
  });

  it('lets a process that calls process.exit() while it waits exit at once', async () => {
    // Prepare: libuv joins its pool threads at exit; a thread parked in poll(2) must be woken first
    const { path } = fifoPair();
    const modulePath = fileURLToPath(new URL('../../agent/sources/kmsg-wait.ts', import.meta.url));
    const script = [
      "import { openSync, constants } from 'node:fs';",
      `const { FdWaiter } = await import(${JSON.stringify(modulePath)});`,
      `const fd = openSync(${JSON.stringify(path)}, constants.O_RDONLY | constants.O_NONBLOCK);`,
      'const waiter = FdWaiter.start({ fd, onReady: () => 0, timeoutMs: 600000 });',
      "setTimeout(() => { console.log(waiter ? 'waiting' : 'no waiter'); process.exit(0); }, 300);",
    ].join('\n');

    // Act
    const t0 = performance.now();
    const { stdout } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', script],
      { cwd: fileURLToPath(new URL('../..', import.meta.url)), timeout: 30_000 },
    );

    // Assess: the 600 s timeout would hold the exit; the eventfd written at exit does not
    expect(stdout.trim()).toBe('waiting');
    expect(performance.now() - t0).toBeLessThan(25_000);
  }, 40_000);

  it.each([
    ['timeoutMs 0', { timeoutMs: 0 }],
    ['timeoutMs 1.5', { timeoutMs: 1.5 }],
    ['pauseMs 0', { pauseMs: 0 }],
    ['minGapMs -1', { minGapMs: -1 }],
  ])('throws a RangeError for %s', (_name, bad) => {
    expect(() => FdWaiter.start({ fd: 0, onReady: () => 0, ...bad })).toThrow(RangeError);
  });
});

describe('canWaitOn', () => {
  it('is true for a FIFO and a character device, false for a regular file and a closed descriptor', () => {
    // Prepare
    const { reader } = fifoPair();
    const file = join(dir, 'kern.log');
    writeFileSync(file, 'x\n');
    const fileFd = openSync(file, 'r');
    fds.push(fileFd);
    const devNull = openSync('/dev/null', 'r');
    fds.push(devNull);

    // Act / Assess
    expect([canWaitOn(reader), canWaitOn(devNull), canWaitOn(fileFd), canWaitOn(99_999)]).toEqual([
      true,
      true,
      false,
      false,
    ]);
  });
});
