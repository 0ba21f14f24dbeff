import { formatIsoMicros, type GpuEvent, MAX_DETAIL_CHARS, normalizePciBusId } from '../../lambdas/contract';
import { systemClock } from '../clock';

/**
 * Kernel-log XIDs: parses the NVIDIA driver's `NVRM: Xid (PCI:…): <code>, pid=…, name=…, <text>`
 * lines in every format `dmesg` and `journalctl -k` print, syslog files (RFC 3164 / 5424) and
 * `talosctl dmesg`, and turns them into contract events. Old drivers print no pid/name, new ones
 * `pid='<unknown>'`; both parse. Pure: no I/O, no clock (the year and time zone of formats that
 * lack them are options). Format reference: NVIDIA Xid catalog (docs/nvml.md §9); leptonai/gpud
 * `pkg/dmesg`; the real captures of test/fixtures/real/kernel-logs/.
 */

/** When a kernel-log line happened: wall-clock time, or seconds since boot (raw kmsg, plain dmesg). */
export type KernelLogTime =
  | {
      /** A wall-clock time (dmesg -T / --time-format iso, journalctl). */
      readonly kind: 'wall';
      /** Milliseconds since the Unix epoch, UTC (may carry a sub-millisecond fraction). */
      readonly epochMs: number;
    }
  | {
      /** A monotonic time (raw /dev/kmsg, plain dmesg): needs the boot time to become a date. */
      readonly kind: 'monotonic';
      /** Seconds since boot, ≥ 0 (microsecond resolution). */
      readonly sinceBootS: number;
    };

/** One NVRM Xid line, parsed. */
export interface XidRecord {
  /** When it happened; absent when the line carries no time (e.g. `dmesg -t`). */
  readonly time?: KernelLogTime;
  /** PCI bus id as the log prints it, e.g. `0000:19:00` (no function number). */
  readonly pci_bus_id: string;
  /** NVIDIA Xid code, e.g. 48 (double-bit ECC), 79 (fallen off the bus). */
  readonly xid: number;
  /** Process id the driver blamed; absent for `pid='<unknown>'` or old drivers that print none. */
  readonly pid?: number;
  /** Process name the driver blamed; absent for `name=<unknown>` or when not printed. */
  readonly process_name?: string;
  /** The driver's text after pid and name, e.g. `Ch 00000008`. */
  readonly detail: string;
}

/** Options for formats whose lines lack a year or a time zone. */
export interface KernelLogOptions {
  /**
   * Offset of the host's local time east of UTC, minutes (−720..840), for `dmesg -T`,
   * `journalctl -k` short/short-precise and RFC 3164 syslog, which print local time without a zone,
   * and for `journalctl -o short-full` lines whose zone is a name other than UTC/GMT (`CET`).
   * @default 0 (UTC, the EC2 default)
   */
  readonly tzOffsetMinutes?: number;
  /**
   * Year of `journalctl -k` short/short-precise lines, which print none (`Feb 23 16:24:18`).
   * @default the UTC year of `now`
   */
  readonly year?: number;
  /**
   * The clock, only read to default `year`.
   * @default systemClock()
   */
  readonly now?: Date;
}

/** What {@link parseKernelLog} found. */
export interface KernelLogParse {
  /** The Xid lines, in log order. */
  readonly records: XidRecord[];
  /** Non-empty lines that are not Xid lines (nvidia-peermem noise, other drivers…). */
  readonly skipped: number;
  /** Time of the last line (Xid or not) that carries one: the end of the capture. */
  readonly lastTime?: KernelLogTime;
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** `dmesg --decode` / `-x` prefix: `kern  :warn  : `. */
const DECODE_PREFIX = /^[a-z]+\s*:[a-z]+\s*:\s/;
/**
 * Syslog priority in front of a line: `<4>` (`dmesg --raw`, RFC 3164 on the wire) or `<4>1 ` (RFC 5424,
 * version 1, followed by an ISO time).
 */
const SYSLOG_PRI = /^<\d{1,3}>(?:1 )?/;
/** Raw /dev/kmsg record: `prio,seq,usec,flags[,…];message`. */
const RAW_KMSG = /^\d+,\d+,(\d+),[^;]*;(.*)$/;
/** Plain dmesg: `[ 1234.567890] message`. */
const DMESG_MONO = /^\[\s*(\d+(?:\.\d+)?)\]\s?(.*)$/;
/** dmesg -T: `[Sun Feb 23 16:24:18 2025] message` (local time). */
const DMESG_CTIME = /^\[[A-Z][a-z]{2} ([A-Z][a-z]{2})\s+(\d{1,2}) (\d{2}):(\d{2}):(\d{2}) (\d{4})\]\s?(.*)$/;
/** ISO 8601 (dmesg --time-format iso, journalctl short-iso[-precise]): `2024-11-15T05:39:15,491363+00:00 message`. */
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[,.](\d+))?(Z|[+-]\d{2}:?\d{2})\s(.*)$/;
/**
 * A bracketed ISO time after up to three `label: ` words (host, facility, level), as `talosctl dmesg`
 * prints: `192.168.11.119: kern: warning: [2026-04-22T21:26:20.599488292Z]: message` (nanoseconds, UTC).
 */
const LABELLED_ISO = /^(?:[^\s[\]]+:\s+){0,3}\[(\d{4}-\d{2}-\d{2}T[^\]\s]+)\]:?\s?(.*)$/;
/** journalctl -o short-full: `Sat 2024-02-17 08:00:34[.123456] UTC host kernel: message`. */
const SHORT_FULL =
  /^[A-Z][a-z]{2} (\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))? ([A-Z]{2,5}|[+-]\d{2}:?\d{2}) (.*)$/;
/**
 * What journal and syslog lines put between their time and the kernel's message: the host and the
 * `kernel:` tag (RFC 5424: `host kernel - - -`), then the kernel's own `[ 218.250408]` stamp that
 * syslog keeps (`worker4 kernel: [  218.250408] NVRM: …`). Stripped, so the message is the driver's.
 */
const KERNEL_TAG = /^(?:\S+\s+)?kernel(?::|\s+-\s+-\s+-)\s+(?:\[\s*\d+(?:\.\d+)?\]\s?)?/;
/** journalctl -o short-unix: `1708156834.123456 host kernel: message` (seconds since the epoch, UTC). */
const SHORT_UNIX = /^(\d{9,11}\.\d{1,9}) (.*)$/;
/** journalctl short / short-precise: `Feb 23 16:24:18[.123456] host kernel: message` (local time, no year). */
const JOURNAL_SHORT = /^([A-Z][a-z]{2})\s+(\d{1,2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d+))? (.*)$/;
/** The Xid itself, anywhere in the message. */
const XID =
  /NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-9A-Fa-f])?)\): (\d+),?\s*(.*)$/;
const PID = /^pid=(?:'?<unknown>'?|'?(\d+)'?)\s*(?:,\s*|$)/;
const NAME = /^name=(<unknown>|[^,]*?)\s*(?:,\s*|$)/;

/**
 * Reads the time at the start of one kernel-log line, in any supported format (see
 * {@link parseXidLine}). A syslog `<pri>` and a `dmesg --decode` prefix are skipped first; the
 * host, the `kernel:` tag and syslog's inner dmesg stamp are cut from the message.
 *
 * @param line - one line, without its newline
 * @param opts - time zone and year for formats that lack them
 * @returns the time and the message after it; `time` absent when the line starts with none
 */
export function parseLogTime(
  line: string,
  opts: KernelLogOptions = {},
): { time?: KernelLogTime; message: string } {
  const read = readLogTime(line, opts);
  return { ...read, message: read.message.replace(KERNEL_TAG, '') };
}

function readLogTime(line: string, opts: KernelLogOptions): { time?: KernelLogTime; message: string } {
  const text = line.replace(SYSLOG_PRI, '').replace(DECODE_PREFIX, '');
  const tzMs = (opts.tzOffsetMinutes ?? 0) * 60_000;
  let m = RAW_KMSG.exec(text);
  if (m) return { time: { kind: 'monotonic', sinceBootS: Number(m[1]) / 1e6 }, message: m[2] ?? '' };
  m = DMESG_MONO.exec(text);
  if (m) return { time: { kind: 'monotonic', sinceBootS: Number(m[1]) }, message: m[2] ?? '' };
  m = DMESG_CTIME.exec(text);
  if (m) {
    const month = MONTHS.indexOf(m[1] ?? '');
    if (month >= 0) {
      const epochMs =
        Date.UTC(Number(m[6]), month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])) - tzMs;
      return { time: { kind: 'wall', epochMs }, message: m[7] ?? '' };
    }
  }
  m = ISO.exec(text);
  if (m) return { time: { kind: 'wall', epochMs: isoEpochMs(m) }, message: m[9] ?? '' };
  m = LABELLED_ISO.exec(text);
  if (m) {
    const iso = ISO.exec(`${m[1]} `);
    if (iso) return { time: { kind: 'wall', epochMs: isoEpochMs(iso) }, message: m[2] ?? '' };
  }
  m = SHORT_FULL.exec(text);
  if (m) {
    const zone = m[8] ?? 'UTC';
    const named = /^[A-Z]+$/.test(zone);
    const offsetMs = named ? (zone === 'UTC' || zone === 'GMT' ? 0 : tzMs) : zoneOffsetMin(zone) * 60_000;
    const epochMs =
      Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) +
      fractionMs(m[7]) -
      offsetMs;
    return { time: { kind: 'wall', epochMs }, message: m[9] ?? '' };
  }
  m = SHORT_UNIX.exec(text);
  if (m) return { time: { kind: 'wall', epochMs: Number(m[1]) * 1000 }, message: m[2] ?? '' };
  m = JOURNAL_SHORT.exec(text);
  if (m) {
    const month = MONTHS.indexOf(m[1] ?? '');
    if (month >= 0) {
      const year = opts.year ?? (opts.now ?? systemClock()).getUTCFullYear();
      const epochMs =
        Date.UTC(year, month, Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5])) +
        fractionMs(m[6]) -
        tzMs;
      return { time: { kind: 'wall', epochMs }, message: m[7] ?? '' };
    }
  }
  return { message: text };
}

/**
 * Parses one kernel-log line into an Xid record, in any format `dmesg` (raw /dev/kmsg, plain,
 * `-T`, `--time-format iso`, `--raw`, each with or without `--decode`), `journalctl -k` (short,
 * short-precise, short-iso[-precise], short-monotonic, short-full, short-unix), syslog files
 * (RFC 3164 `/var/log/messages` / `kern.log`, RFC 5424, with or without a `<pri>`) or
 * `talosctl dmesg` prints. A line with no time it knows (`kernel: NVRM: Xid …`, a bare message)
 * still gives the record, without `time`.
 *
 * @param line - one line, without its newline
 * @param opts - time zone and year for formats that lack them
 * @returns the record, or `undefined` when the line is not an NVRM Xid line
 * @example
 * parseXidLine("[ 1234.567890] NVRM: Xid (PCI:0000:19:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.");
 * // { time: { kind: 'monotonic', sinceBootS: 1234.56789 }, pci_bus_id: '0000:19:00', xid: 79, detail: 'GPU has fallen off the bus.' }
 */
export function parseXidLine(line: string, opts: KernelLogOptions = {}): XidRecord | undefined {
  const x = XID.exec(line);
  if (!x) return undefined;
  const { time } = parseLogTime(line, opts);
  let rest = (x[3] ?? '').trim();
  let pid: number | undefined;
  let processName: string | undefined;
  const p = PID.exec(rest);
  if (p) {
    if (p[1] !== undefined) pid = Number(p[1]);
    rest = rest.slice(p[0].length);
    const n = NAME.exec(rest);
    if (n) {
      if (n[1] !== '<unknown>' && n[1] !== '') processName = n[1];
      rest = rest.slice(n[0].length);
    }
  }
  return {
    ...(time ? { time } : {}),
    pci_bus_id: x[1] ?? '',
    xid: Number(x[2]),
    ...(pid !== undefined ? { pid } : {}),
    ...(processName !== undefined ? { process_name: processName } : {}),
    detail: rest.trim(),
  };
}

/**
 * Parses a whole kernel log (one format per file, or mixed), keeping the Xid lines.
 *
 * @param text - the log, lines separated by `\n` or `\r\n`
 * @param opts - time zone and year for formats that lack them
 * @returns `{ records, skipped, lastTime }`: Xid records in order, the count of other non-empty
 *   lines, and the time of the last line that carries one
 */
export function parseKernelLog(text: string, opts: KernelLogOptions = {}): KernelLogParse {
  const records: XidRecord[] = [];
  let skipped = 0;
  let lastTime: KernelLogTime | undefined;
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const record = parseXidLine(line, opts);
    if (record) records.push(record);
    else skipped++;
    const { time } = record ? { time: record.time } : parseLogTime(line, opts);
    if (time) lastTime = time;
  }
  return { records, skipped, ...(lastTime ? { lastTime } : {}) };
}

/**
 * Turns an Xid record into a contract event (`kind: 'xid'`, `source: 'kmsg'`), with the PCI bus
 * id normalised to `0000:19:00.0` and the detail cut to {@link MAX_DETAIL_CHARS} characters.
 *
 * @param record - a record from {@link parseXidLine}
 * @param opts - `bootTime`: when the host booted, needed for monotonic (raw kmsg, plain dmesg) times
 * @returns the event; `undefined` when the time cannot be known (no time, or monotonic without
 *   `bootTime`) or the Xid code is outside the contract's 1..999
 */
export function toXidEvent(record: XidRecord, opts: { bootTime?: Date } = {}): GpuEvent | undefined {
  const t = record.time;
  if (!t) return undefined;
  let epochMs: number;
  if (t.kind === 'wall') epochMs = t.epochMs;
  else if (opts.bootTime) epochMs = opts.bootTime.getTime() + t.sinceBootS * 1000;
  else return undefined;
  if (!Number.isInteger(record.xid) || record.xid < 1 || record.xid > 999) return undefined;
  const pci = normalizePciBusId(record.pci_bus_id);
  return {
    at: formatIsoMicros(epochMs),
    kind: 'xid',
    source: 'kmsg',
    xid: record.xid,
    ...(pci ? { pci_bus_id: pci } : {}),
    ...(record.pid !== undefined ? { pid: record.pid } : {}),
    ...(record.process_name !== undefined ? { process_name: record.process_name.slice(0, 256) } : {}),
    ...(record.detail !== '' ? { detail: record.detail.slice(0, MAX_DETAIL_CHARS) } : {}),
  };
}

/** Milliseconds since the epoch of an {@link ISO} match. */
function isoEpochMs(m: RegExpExecArray): number {
  return (
    Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) +
    fractionMs(m[7]) -
    zoneOffsetMin(m[8] ?? 'Z') * 60_000
  );
}

/** Minutes east of UTC of an ISO zone: `Z`, `+00:00`, `-0500`. */
function zoneOffsetMin(zone: string): number {
  if (zone === 'Z') return 0;
  return (zone.startsWith('-') ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(-2)));
}

function fractionMs(digits: string | undefined): number {
  if (!digits) return 0;
  return Number(`0.${digits}`) * 1000;
}
