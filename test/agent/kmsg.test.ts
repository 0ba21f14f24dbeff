import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  type KernelLogTime,
  parseKernelLog,
  parseLogTime,
  parseXidLine,
  toXidEvent,
} from '../../agent/sources/kmsg';
import { EventSchema } from '../../lambdas/contract';

const real = (name: string): string =>
  readFileSync(new URL(`../fixtures/real/${name}`, import.meta.url), 'utf8');

const BODY = "NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.";
const BODY_PID = 'NVRM: Xid (PCI:0000:19:00): 94, pid=1248209, name=python3.10, Ch 00000008';
const BOOT = new Date('2025-02-23T00:00:00Z');
const seconds = (t: KernelLogTime | undefined): number =>
  t === undefined ? Number.NaN : t.kind === 'wall' ? t.epochMs / 1000 : t.sinceBootS;

describe('parseXidLine', () => {
  it.each([
    ['raw /dev/kmsg', `4,1234,5678901234,-;${BODY}`, { kind: 'monotonic', sinceBootS: 5678.901234 }],
    [
      'raw /dev/kmsg with continuation flag',
      `4,99,1000000,c,more;${BODY}`,
      { kind: 'monotonic', sinceBootS: 1 },
    ],
    ['plain dmesg', `[ 1234.567890] ${BODY}`, { kind: 'monotonic', sinceBootS: 1234.56789 }],
    [
      'plain dmesg --decode',
      `kern  :warn  : [ 1234.567890] ${BODY}`,
      { kind: 'monotonic', sinceBootS: 1234.56789 },
    ],
    [
      'dmesg -T',
      `[Sun Feb 23 16:24:18 2025] ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18Z') },
    ],
    [
      'dmesg -T --decode',
      `kern  :err   : [Sun Feb  2 06:04:08 2025] ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-02T06:04:08Z') },
    ],
    [
      'dmesg --time-format iso',
      `2024-11-15T05:39:15,491363+00:00 ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2024-11-15T05:39:15.491Z') + 0.363 },
    ],
    [
      'dmesg --decode --time-format iso',
      `kern  :warn  : 2025-01-21T02:21:33,500000+02:00 ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-01-21T00:21:33.500Z') },
    ],
    [
      'journalctl -k (short)',
      `Feb 23 16:24:18 ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18Z') },
    ],
    [
      'journalctl -k -o short-precise',
      `Feb 23 16:24:18.250000 ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18.250Z') },
    ],
    [
      'journalctl -k -o short-iso',
      `2025-02-23T16:24:18+0000 ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18Z') },
    ],
    [
      'journalctl -k -o short-iso-precise',
      `2025-02-23T16:24:18.125000-0100 ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T17:24:18.125Z') },
    ],
    [
      'journalctl -k -o short-monotonic',
      `[ 1234.567890] ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'monotonic', sinceBootS: 1234.56789 },
    ],
    [
      'journalctl -k -o short-full',
      `Sun 2025-02-23 16:24:18 UTC ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18Z') },
    ],
    [
      'journalctl -k -o short-full with a numeric zone',
      `Sun 2025-02-23 16:24:18.500000 +01:00 ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T15:24:18.5Z') },
    ],
    [
      'journalctl -k -o short-unix',
      `1740327858.250000 ip-10-0-1-2 kernel: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18.25Z') },
    ],
    [
      'dmesg --raw (priority prefix)',
      `<4>[ 1234.567890] ${BODY}`,
      { kind: 'monotonic', sinceBootS: 1234.56789 },
    ],
    [
      'syslog RFC 3164 (/var/log/messages, kern.log) with a priority',
      `<4>Feb 23 16:24:18 ip-10-0-1-2 kernel: [ 1234.567890] ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18Z') },
    ],
    [
      'syslog RFC 5424',
      `<4>1 2025-02-23T16:24:18.123456Z ip-10-0-1-2 kernel - - - ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18.123Z') + 0.456 },
    ],
    [
      'talosctl dmesg (host, facility, level, bracketed RFC 3339 time in ns)',
      `192.168.11.119: kern: warning: [2025-02-23T16:24:18.599488292Z]: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18.599Z') + 0.488292 },
    ],
    [
      'talosctl dmesg with an 8-digit fraction (trailing zero dropped)',
      `192.168.11.119: kern: warning: [2025-02-23T16:24:18.52643656Z]: ${BODY}`,
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18.526Z') + 0.43656 },
    ],
  ])('reads the time and the Xid of a %s line', (_format, line, time) => {
    // Prepare
    const opts = { year: 2025 };

    // Act
    const record = parseXidLine(line, opts);

    // Assess
    expect(record).toBeDefined();
    expect(record?.xid).toBe(79);
    expect(record?.pci_bus_id).toBe('0000:19:00');
    expect(record?.pid).toBeUndefined();
    expect(record?.process_name).toBeUndefined();
    expect(record?.detail).toBe('GPU has fallen off the bus.');
    expect(record?.time?.kind).toBe(time.kind);
    expect(seconds(record?.time)).toBeCloseTo(seconds(time as KernelLogTime), 6);
  });

  it.each([
    ['pid and name', BODY_PID, { pid: 1248209, process_name: 'python3.10', detail: 'Ch 00000008' }],
    [
      'pid without name (old drivers)',
      'NVRM: Xid (PCI:0000:00:1e): 31, pid=2683, Ch 00000005, intr 10000000',
      { pid: 2683, detail: 'Ch 00000005, intr 10000000' },
    ],
    [
      'no pid at all',
      'NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.',
      { detail: 'GPU has fallen off the bus.' },
    ],
    [
      'unknown pid and name',
      "NVRM: Xid (PCI:0000:3b:00): 63, pid='<unknown>', name=<unknown>, Row Remapper",
      { detail: 'Row Remapper' },
    ],
  ])('keeps the blamed process when the line has %s', (_case, line, expected) => {
    // Prepare / Act
    const record = parseXidLine(`[ 10.000000] ${line}`);

    // Assess
    expect({ pid: record?.pid, process_name: record?.process_name, detail: record?.detail }).toEqual({
      pid: undefined,
      process_name: undefined,
      ...expected,
    });
  });

  it.each([
    [
      'nvidia-peermem noise',
      '2024-11-15T05:39:15,491363+00:00 nvidia-peermem nv_get_p2p_free_callback:127 ERROR detected invalid context',
    ],
    ['another NVRM line', '[ 5.1] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  535.161.08'],
    ['an empty line', ''],
  ])('returns undefined for %s', (_case, line) => {
    // Prepare / Act / Assess
    expect(parseXidLine(line)).toBeUndefined();
  });

  it('applies the time-zone offset to local-time formats', () => {
    // Prepare
    const line = `[Sun Feb 23 16:24:18 2025] ${BODY}`;

    // Act
    const record = parseXidLine(line, { tzOffsetMinutes: 60 });

    // Assess
    expect(record?.time).toEqual({ kind: 'wall', epochMs: Date.parse('2025-02-23T15:24:18Z') });
  });

  it('applies the time-zone offset to short-full lines with a named local zone, not to UTC', () => {
    // Prepare
    const local = `Sun 2025-02-23 16:24:18 CET host kernel: ${BODY}`;
    const utc = `Sun 2025-02-23 16:24:18 GMT host kernel: ${BODY}`;

    // Act
    const records = [local, utc].map((l) => parseXidLine(l, { tzOffsetMinutes: 60 }));

    // Assess
    expect(records.map((r) => r?.time)).toEqual([
      { kind: 'wall', epochMs: Date.parse('2025-02-23T15:24:18Z') },
      { kind: 'wall', epochMs: Date.parse('2025-02-23T16:24:18Z') },
    ]);
  });

  it.each([
    ['RFC 3164 syslog with the dmesg stamp inside', 'Dec  2 11:38:46 worker4 kernel: [  218.250408] NVRM: x'],
    ['journalctl -k short', 'Feb 23 16:24:18 ip-10-0-1-2 kernel: NVRM: x'],
    ['RFC 5424 syslog', '<4>1 2025-02-23T16:24:18Z ip-10-0-1-2 kernel - - - NVRM: x'],
    ['a journal line cut of its time', 'kernel: NVRM: x'],
    ['plain dmesg', '[ 218.250408] NVRM: x'],
  ])('keeps only the kernel message of a %s line', (_format, line) => {
    // Prepare / Act / Assess
    expect(parseLogTime(line, { year: 2024 }).message).toBe('NVRM: x');
  });

  it('reads no time from a bracketed text that is not an ISO time', () => {
    // Prepare / Act
    const record = parseXidLine(`node-1: kern: warning: [not-a-time]: ${BODY}`);

    // Assess
    expect(record?.xid).toBe(79);
    expect(record?.time).toBeUndefined();
  });

  it('takes the journal year from the clock when no year is given', () => {
    // Prepare
    const line = `Feb 23 16:24:18 host kernel: ${BODY}`;

    // Act
    const record = parseXidLine(line, { now: new Date('2023-06-01T00:00:00Z') });

    // Assess
    expect(record?.time).toEqual({ kind: 'wall', epochMs: Date.parse('2023-02-23T16:24:18Z') });
  });
});

describe('parseKernelLog on real captures', () => {
  it('finds one Xid 48, one 63 and nine 94 on 0000:19:00 in the gpud iso log', () => {
    // Prepare
    const text = real('dmesg-xid48-63-94.iso.log');

    // Act
    const { records, skipped, lastTime } = parseKernelLog(text);

    // Assess
    expect(records.map((r) => r.xid)).toEqual([48, 63, 94, 94, 94, 94, 94, 94, 94, 94, 94]);
    expect(new Set(records.map((r) => r.pci_bus_id))).toEqual(new Set(['0000:19:00']));
    expect(skipped).toBe(30);
    expect(records.slice(3).every((r) => r.pid === 1248209 && r.process_name === 'python3.10')).toBe(true);
    expect(records[0]?.pid).toBeUndefined();
    expect(records[0]?.detail).toMatch(/^An uncorrectable double bit error \(DBE\)/);
    expect(lastTime).toEqual({ kind: 'wall', epochMs: Date.parse('2024-11-15T12:02:15.950Z') + 0.445 });
  });

  it('finds 629 Xid 13 and 7 Xid 43 on 0000:38:00 in the gpud decode iso log', () => {
    // Prepare
    const text = real('dmesg-xid13-43.decode.iso.log');

    // Act
    const { records, skipped } = parseKernelLog(text);

    // Assess
    expect(records.filter((r) => r.xid === 13)).toHaveLength(629);
    expect(records.filter((r) => r.xid === 43)).toHaveLength(7);
    expect(records).toHaveLength(636);
    expect(skipped).toBe(0);
    expect(records.every((r) => r.pci_bus_id === '0000:38:00')).toBe(true);
    expect(records.at(-1)).toMatchObject({
      xid: 43,
      pid: 2924364,
      process_name: 'pt_main_thread',
      detail: 'Ch 00000008',
    });
  });

  it.each(['dmesg-xid48-63-94.iso.log', 'dmesg-xid13-43.decode.iso.log'])(
    'builds events from %s that pass the contract',
    (name) => {
      // Prepare
      const { records } = parseKernelLog(real(name));

      // Act
      const events = records.map((r) => toXidEvent(r));

      // Assess
      for (const event of events) {
        expect(event).toBeDefined();
        expect(EventSchema.safeParse(event).success).toBe(true);
      }
    },
  );
});

describe('toXidEvent', () => {
  it('builds a contract event with the normalised bus id, pid, name and detail', () => {
    // Prepare
    const record = parseXidLine(`2024-11-15T12:02:03,521616+00:00 ${BODY_PID}`);

    // Act
    const event = record && toXidEvent(record);

    // Assess
    expect(event).toEqual({
      at: '2024-11-15T12:02:03.521616Z',
      kind: 'xid',
      source: 'kmsg',
      xid: 94,
      pci_bus_id: '0000:19:00.0',
      pid: 1248209,
      process_name: 'python3.10',
      detail: 'Ch 00000008',
    });
  });

  it('dates a monotonic record from the boot time', () => {
    // Prepare
    const record = parseXidLine(`[ 3600.500000] ${BODY}`);

    // Act
    const event = record && toXidEvent(record, { bootTime: BOOT });

    // Assess
    expect(event?.at).toBe('2025-02-23T01:00:00.500000Z');
  });

  it('returns undefined for a monotonic record without a boot time', () => {
    // Prepare
    const record = parseXidLine(`4,1,1000,-;${BODY}`);

    // Act / Assess
    expect(record && toXidEvent(record)).toBeUndefined();
  });

  it('cuts the detail to the contract limit', () => {
    // Prepare
    const record = parseXidLine(`[ 1.0] NVRM: Xid (PCI:0000:19:00): 13, pid=1, name=a, ${'x'.repeat(5000)}`);

    // Act
    const event = record && toXidEvent(record, { bootTime: BOOT });

    // Assess
    expect(event?.detail).toHaveLength(1024);
    expect(EventSchema.safeParse(event).success).toBe(true);
  });
});
