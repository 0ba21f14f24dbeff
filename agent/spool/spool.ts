import type { FileHandle } from 'node:fs/promises';
import { mkdir, open, readdir, readFile, rename, stat, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import type { Batch } from '../../lambdas/contract';
import { systemClock } from '../clock';
import { estimateLoss, type KnownRecord } from './damage-estimate';
import { syncDir, writeFileAtomic } from './durable-file';
import { SpoolClosedError, SpoolCorruptError, SpoolOrderError } from './errors';
import {
  decodeRecord,
  encodeFiller,
  encodeRecord,
  isFiller,
  MAX_RECORD_PAYLOAD_BYTES,
  MIN_RECORD_BYTES,
  parseSegmentFileName,
  RECORD_HEADER_BYTES,
  SEGMENT_MAGIC,
  scanSegment,
  segmentFileName,
} from './segment-format';
import {
  type DroppedReport,
  INITIAL_CURSOR,
  readCursor,
  type SpoolCursor,
  writeCursor,
} from './spool-cursor';

/** Where the agent keeps its spool on a host (systemd `StateDirectory=gpu-sentinel`). */
export const DEFAULT_SPOOL_DIR = '/var/lib/gpu-sentinel/spool';

/** Default bound of the spool's queued records, bytes: 256 MiB (~43 000 8-GPU batches, ~5 days of 10 s windows). */
export const DEFAULT_SPOOL_MAX_BYTES = 256 * 1024 * 1024;

/** Default age past which a queued batch is dropped, seconds: 72 h. */
export const DEFAULT_SPOOL_MAX_AGE_S = 72 * 3600;

/**
 * Largest `maxAgeS`, seconds: 6 days. The API refuses times more than 7 days old (`MAX_PAST_S`);
 * one day of margin covers a horizon window's start and clock skew.
 */
export const MAX_SPOOL_MAX_AGE_S = 6 * 24 * 3600;

/** Default size at which a segment file is closed and a new one started, bytes: 8 MiB. */
export const DEFAULT_SPOOL_SEGMENT_BYTES = 8 * 1024 * 1024;

/** Default number of quarantined batches kept in `rejected/` (the oldest are deleted past it). */
export const DEFAULT_MAX_REJECTED_FILES = 1000;

/** Name of the cursor file in the spool directory. */
export const CURSOR_FILE = 'cursor.json';

/** Name of the quarantine directory in the spool directory. */
export const REJECTED_DIR = 'rejected';

/** Name of the directory a segment file that is not a spool segment (bad magic) is moved to on open. */
export const DAMAGED_DIR = 'damaged';

/** Options of {@link Spool.open}. */
export interface SpoolOptions {
  /** The spool directory; created (with parents) when missing. @default {@link DEFAULT_SPOOL_DIR} */
  readonly dir?: string;
  /**
   * Most bytes of queued records (payload + 8 bytes of framing each), 1024..2^40. Appending past it
   * drops the oldest batches. Disk use is at most this plus one partly acked segment.
   * @default {@link DEFAULT_SPOOL_MAX_BYTES} (256 MiB)
   */
  readonly maxBytes?: number;
  /**
   * Age past which a queued batch is dropped, seconds, 60..{@link MAX_SPOOL_MAX_AGE_S} (6 days).
   * A batch's age is measured from its `sent_at`.
   * @default {@link DEFAULT_SPOOL_MAX_AGE_S} (72 h)
   */
  readonly maxAgeS?: number;
  /** Size past which the next append starts a new segment file, bytes, 1024..1 GiB. @default {@link DEFAULT_SPOOL_SEGMENT_BYTES} (8 MiB) */
  readonly segmentBytes?: number;
  /** Most files kept in `rejected/`, 1..100000; the lowest `seq` are deleted past it. @default {@link DEFAULT_MAX_REJECTED_FILES} */
  readonly maxRejectedFiles?: number;
  /** The clock, for ages and `rejected_at`. @default systemClock */
  readonly clock?: () => Date;
  /** Called once per condition worth an operator's attention (drops, repaired files). @default none */
  readonly onWarning?: (message: string, data?: Record<string, unknown>) => void;
}

/** What {@link Spool.stats} returns. */
export interface SpoolStats {
  /** Batches queued, ≥ 0. */
  readonly batches: number;
  /** Bytes of the queued records (payload + framing), ≥ 0. */
  readonly bytes: number;
  /** `sent_at` of the oldest queued batch (RFC 3339 UTC); absent when empty. */
  readonly oldest_at?: string;
  /** Batches dropped (bound, age, damaged records) since the spool directory was created, ≥ 0. */
  readonly dropped_total: number;
  /**
   * Highest `seq` ever appended to this spool (queued or gone); absent for a new spool. Batches sent
   * without passing through the spool are not seen, so this is a lower bound of the agent's last seq.
   */
  readonly last_seq?: number;
}

/** Why the API refused a batch, saved next to it in `rejected/`. */
export interface QuarantineReason {
  /** What happened, e.g. the `SendRejectedError` message. */
  readonly message: string;
  /** HTTP status of the refusal (400, 403, 413, …). */
  readonly status?: number;
  /** The API's `error`. */
  readonly error?: string;
  /** The API's `path` of the first bad field. */
  readonly path?: string;
}

/** Where a queued record is and what the spool must know of it without reading it. */
interface Entry {
  readonly segment: number;
  readonly offset: number;
  readonly bytes: number;
  readonly seq: number;
  readonly batchId: string;
  readonly atMs: number;
  readonly windows: number;
}

/** The segment appends go to. */
interface ActiveSegment {
  readonly index: number;
  readonly handle: FileHandle;
  size: number;
}

/** Why a batch leaves the queue: delivered, refused by the API, or dropped by a bound or damage. */
type Removal = 'ack' | 'quarantine' | 'drop';

/**
 * A durable FIFO of contract batches on local disk, for batches the API could not take yet.
 *
 * Layout of `dir`: segment files `000000000000.seg`, `000000000001.seg`, … (append-only; see
 * `segment-format.ts`: magic, then records of length + CRC-32 + batch JSON), `cursor.json` (where the
 * queue starts, replaced atomically), and `rejected/<seq>-<batch_id>.json` (quarantined batches).
 *
 * Crash safety (`kill -9` or power loss at any point): `append` resolves only after the record is
 * fdatasync'd (a new segment's file and directory entry are fsync'd before its first record); a torn
 * last record is truncated on open and was never acknowledged to the caller. A batch leaves only by
 * an atomic cursor replacement (write-tmp + fsync + rename + fsync of the directory) done after the
 * 2xx; segments wholly before the cursor are deleted after it, and again on open. A crash between the
 * 2xx and the cursor write re-sends that batch, which the API stores once (same `batch_id`). Unreported
 * drops travel in the same cursor write, so a crash never makes a drop silent.
 *
 * Methods are serialized: concurrent calls run one after another in call order. One process per
 * directory.
 *
 * @example
 * const spool = await Spool.open({ dir: '/var/lib/gpu-sentinel/spool' });
 * await spool.append(batch);
 * const oldest = await spool.peek();
 * if (oldest) { await sender.send(oldest); await spool.ack(oldest.batch_id); }
 */
export class Spool {
  private readonly entries: Entry[] = [];
  /** Existing segment files: index → valid bytes. */
  private readonly segments = new Map<number, number>();
  private active: ActiveSegment | undefined;
  private bytes = 0;
  private cursor: SpoolCursor = INITIAL_CURSOR;
  private lastSeq: number | undefined;
  /** Bumped by takeDropped, so a cursor written with stale `unreported` stays dirty. */
  private reportEpoch = 0;
  private cursorDirty = false;
  private closed = false;
  private chain: Promise<unknown> = Promise.resolve();
  private readonly cursorFile: string;
  private readonly rejectedDir: string;

  private constructor(
    /** The spool directory. */
    readonly dir: string,
    private readonly maxBytes: number,
    private readonly maxAgeS: number,
    private readonly segmentBytes: number,
    private readonly maxRejectedFiles: number,
    private readonly clock: () => Date,
    private readonly warn: (message: string, data?: Record<string, unknown>) => void,
  ) {
    this.cursorFile = join(dir, CURSOR_FILE);
    this.rejectedDir = join(dir, REJECTED_DIR);
  }

  /**
   * Opens (or creates) the spool in `dir`: repairs torn or damaged segment tails, deletes segments
   * already acked, then drops batches past the age or byte bound.
   *
   * @param opts - see {@link SpoolOptions}
   * @returns the open spool
   * @throws {RangeError} when a number option is out of range
   * @throws {SpoolCorruptError} when a `*.seg` file in `dir` is not a spool segment (foreign file)
   * @throws {Error} the fs error when `dir` cannot be created, read or written (EACCES, EROFS, …)
   */
  static async open(opts: SpoolOptions = {}): Promise<Spool> {
    const spool = new Spool(
      opts.dir ?? DEFAULT_SPOOL_DIR,
      checkRange('maxBytes', opts.maxBytes ?? DEFAULT_SPOOL_MAX_BYTES, 1024, 2 ** 40),
      checkRange('maxAgeS', opts.maxAgeS ?? DEFAULT_SPOOL_MAX_AGE_S, 60, MAX_SPOOL_MAX_AGE_S),
      checkRange('segmentBytes', opts.segmentBytes ?? DEFAULT_SPOOL_SEGMENT_BYTES, 1024, 2 ** 30),
      checkRange('maxRejectedFiles', opts.maxRejectedFiles ?? DEFAULT_MAX_REJECTED_FILES, 1, 100_000),
      opts.clock ?? systemClock,
      opts.onWarning ?? (() => undefined),
    );
    await mkdir(spool.dir, { recursive: true });
    await spool.recover();
    return spool;
  }

  /**
   * Appends a batch durably (fdatasync'd before this resolves). Drops the oldest batches first when
   * the new record would pass `maxBytes`, and any past `maxAgeS`. A batch that alone is larger than
   * `maxBytes` (or than the API's decompressed limit), or already older than `maxAgeS`, is not written and counts as dropped.
   *
   * @param batch - a contract batch
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error (ENOSPC, EIO, …); the batch is then not in the spool and the file is left as before
   */
  append(batch: Batch): Promise<void> {
    return this.exclusive(async () => {
      const payload = Buffer.from(JSON.stringify(batch), 'utf8');
      const recordBytes = payload.length + RECORD_HEADER_BYTES;
      const atMs = batchTimeMs(batch, this.clock());
      const meta = { seq: batch.seq, batchId: batch.batch_id, atMs, windows: flushWindows(batch) };
      if (payload.length > MAX_RECORD_PAYLOAD_BYTES || recordBytes > this.maxBytes) {
        this.warn('batch larger than the spool bound; dropped', { seq: batch.seq, bytes: recordBytes });
        await this.remove(0, 'drop', [meta]);
        return;
      }
      if (atMs < this.cutoffMs()) {
        this.warn('batch older than the spool age bound; dropped', {
          seq: batch.seq,
          sent_at: batch.sent_at,
        });
        await this.remove(0, 'drop', [meta]);
        return;
      }
      await this.enforceLimits(recordBytes);
      const segment = await this.activeSegment();
      const record = encodeRecord(payload);
      try {
        let done = 0;
        while (done < record.length) {
          const { bytesWritten } = await segment.handle.write(record, done, record.length - done);
          done += bytesWritten;
        }
        await segment.handle.datasync();
      } catch (error) {
        await this.undoPartialWrite(segment);
        throw error;
      }
      this.entries.push({ segment: segment.index, offset: segment.size, bytes: record.length, ...meta });
      segment.size += record.length;
      this.segments.set(segment.index, segment.size);
      this.bytes += record.length;
      this.lastSeq = Math.max(this.lastSeq ?? batch.seq, batch.seq);
    });
  }

  /**
   * The oldest queued batch, read back from disk; batches past `maxAgeS` are dropped first. A record
   * that no longer reads back intact is dropped (counted, warned) and the next one returned.
   *
   * @returns the oldest batch, or undefined when the spool is empty
   * @throws {SpoolClosedError} after `close()`
   */
  peek(): Promise<Batch | undefined> {
    return this.exclusive(async () => {
      await this.enforceLimits(0);
      return this.readHead();
    });
  }

  /**
   * Removes the oldest batch durably, after the API took it (2xx). Deletes segment files left with
   * no queued record.
   *
   * @param batchId - `batch_id` of the oldest batch (the one {@link peek} returned)
   * @returns true when removed; false when no queued batch has that id (it was dropped meanwhile)
   * @throws {SpoolOrderError} when the batch is queued but is not the oldest
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error; the batch then stays queued
   */
  ack(batchId: string): Promise<boolean> {
    return this.exclusive(async () => {
      if (!this.isHead(batchId)) return false;
      await this.remove(1, 'ack');
      return true;
    });
  }

  /**
   * The oldest queued batches, read back from disk, for one merged request: up to `maxCount` of them
   * and up to `maxBytes` of records (the first is returned whatever its size). Batches past
   * `maxAgeS` are dropped first, and a head that no longer reads back is dropped (counted, warned)
   * as in {@link peek}; a later record that does not read back ends the list (it becomes the head
   * of a later call).
   *
   * @param maxCount - most batches, ≥ 1
   * @param maxBytes - most record bytes (payload + framing) after the first batch
   * @returns oldest first; empty when the spool is empty
   * @throws {SpoolClosedError} after `close()`
   */
  peekMany(maxCount: number, maxBytes: number): Promise<Batch[]> {
    return this.exclusive(async () => {
      await this.enforceLimits(0);
      const head = await this.readHead();
      if (!head) return [];
      const out = [head];
      let bytes = this.entries[0]?.bytes ?? 0;
      for (let i = 1; i < Math.min(maxCount, this.entries.length); i++) {
        const entry = this.entries[i] as Entry;
        if (bytes + entry.bytes > maxBytes) break;
        try {
          out.push(await this.readEntry(entry));
        } catch {
          break;
        }
        bytes += entry.bytes;
      }
      return out;
    });
  }

  /**
   * Removes the oldest batches durably, with one cursor write, after the API took them in one
   * request (2xx).
   *
   * @param batchIds - `batch_id`s of the oldest batches, oldest first (those {@link peekMany} returned)
   * @returns how many were removed: the leading ids still queued in that order (0 when the first was dropped meanwhile)
   * @throws {SpoolOrderError} when the first is queued but is not the oldest
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error; the batches then stay queued
   */
  ackMany(batchIds: readonly string[]): Promise<number> {
    return this.exclusive(async () => {
      const first = batchIds[0];
      if (first === undefined || !this.isHead(first)) return 0;
      let n = 0;
      while (n < batchIds.length && this.entries[n]?.batchId === batchIds[n]) n += 1;
      await this.remove(n, 'ack');
      return n;
    });
  }

  /**
   * Moves the oldest batch, which the API refused (4xx), to `rejected/<seq>-<batch_id>.json` with the
   * refusal, for inspection; it is not retried. The file is written durably before the batch leaves
   * the queue.
   *
   * @param batchId - `batch_id` of the oldest batch
   * @param reason - the API's refusal
   * @returns the quarantine file's path; undefined when no queued batch has that id, or when the record no longer reads back (then dropped and counted)
   * @throws {SpoolOrderError} when the batch is queued but is not the oldest
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error; the batch then stays queued
   */
  quarantine(batchId: string, reason: QuarantineReason): Promise<string | undefined> {
    return this.exclusive(async () => {
      if (!this.isHead(batchId)) return undefined;
      const batch = await this.readHead();
      if (batch?.batch_id !== batchId) return undefined;
      const file = await this.writeRejected(batch, reason);
      await this.remove(1, 'quarantine');
      return file;
    });
  }

  /**
   * Saves a batch that never entered the queue (refused on a direct send) to
   * `rejected/<seq>-<batch_id>.json`, like {@link quarantine}.
   *
   * @param batch - the refused batch
   * @param reason - the API's refusal
   * @returns the quarantine file's path
   * @throws {SpoolClosedError} after `close()`
   * @throws {Error} the fs error
   */
  saveRejected(batch: Batch, reason: QuarantineReason): Promise<string> {
    return this.exclusive(() => this.writeRejected(batch, reason));
  }

  /**
   * Counters of the queue, from memory (no I/O).
   *
   * @returns `{ batches, bytes, oldest_at?, dropped_total, last_seq? }`
   */
  stats(): SpoolStats {
    const head = this.entries[0];
    return {
      batches: this.entries.length,
      bytes: this.bytes,
      ...(head ? { oldest_at: new Date(head.atMs).toISOString() } : {}),
      dropped_total: this.cursor.droppedTotal,
      ...(this.lastSeq !== undefined ? { last_seq: this.lastSeq } : {}),
    };
  }

  /**
   * Drops not yet reported, then resets them: what a `data_dropped` event must carry. The reset is
   * made durable with the next cursor write (or `close()`); after a crash before it, the same drops
   * are reported again (at least once, never silently).
   *
   * @returns batches and flush windows dropped since the last call, and their seq range; undefined when none
   */
  takeDroppedReport(): DroppedReport | undefined {
    const report = this.cursor.unreported;
    if (!report) return undefined;
    const { unreported: _taken, ...rest } = this.cursor;
    this.cursor = rest;
    this.reportEpoch += 1;
    this.cursorDirty = true;
    return report;
  }

  /**
   * Batches dropped since the last call (of this or {@link takeDroppedReport}), then resets the count.
   *
   * @returns a count ≥ 0
   */
  takeDropped(): number {
    return this.takeDroppedReport()?.batches ?? 0;
  }

  /**
   * Writes the cursor if a report was taken since the last write, and closes the segment file.
   * Idempotent. Other methods throw {@link SpoolClosedError} afterwards.
   *
   * @throws {Error} the fs error of the cursor write
   */
  close(): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.closed) return;
      try {
        if (this.cursorDirty) await this.writeCursorNow(this.cursor);
      } finally {
        this.closed = true;
        const active = this.active;
        this.active = undefined;
        await active?.handle.close();
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(() => {
      if (this.closed) throw new SpoolClosedError(this.dir);
      return fn();
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  private cutoffMs(): number {
    return this.clock().getTime() - this.maxAgeS * 1000;
  }

  private isHead(batchId: string): boolean {
    const head = this.entries[0];
    if (head?.batchId === batchId) return true;
    if (head && this.entries.some((e) => e.batchId === batchId))
      throw new SpoolOrderError(batchId, head.batchId);
    return false;
  }

  /** Drops the oldest batches past the age bound, and as many as needed to fit `extraBytes` more. */
  private async enforceLimits(extraBytes: number): Promise<void> {
    const cutoff = this.cutoffMs();
    let n = 0;
    let bytes = this.bytes;
    let aged = 0;
    for (const e of this.entries) {
      if (e.atMs < cutoff) aged += 1;
      else if (bytes + extraBytes <= this.maxBytes) break;
      bytes -= e.bytes;
      n += 1;
    }
    if (n === 0) return;
    this.warn('spool bound reached: dropped the oldest batches', {
      dropped: n,
      aged,
      max_bytes: this.maxBytes,
      max_age_s: this.maxAgeS,
    });
    await this.remove(n, 'drop');
  }

  /** Reads the oldest entry; drops (counted) heads that no longer read back. */
  private async readHead(): Promise<Batch | undefined> {
    for (;;) {
      const head = this.entries[0];
      if (!head) return undefined;
      try {
        return await this.readEntry(head);
      } catch (error) {
        this.warn('spooled batch no longer reads back; dropped', {
          seq: head.seq,
          segment: segmentFileName(head.segment),
          error: (error as Error).message,
        });
        await this.remove(1, 'drop');
      }
    }
  }

  private async readEntry(entry: Entry): Promise<Batch> {
    const handle = await open(join(this.dir, segmentFileName(entry.segment)), 'r');
    let bytes: Buffer;
    try {
      bytes = Buffer.alloc(entry.bytes);
      const { bytesRead } = await handle.read(bytes, 0, entry.bytes, entry.offset);
      if (bytesRead !== entry.bytes) throw new Error(`expected ${entry.bytes} bytes, read ${bytesRead}`);
    } finally {
      await handle.close();
    }
    const payload = decodeRecord(bytes);
    if (!payload) throw new Error('record length or CRC-32 mismatch');
    const batch = JSON.parse(payload.toString('utf8')) as Batch;
    if (batch.batch_id !== entry.batchId)
      throw new Error(`expected batch ${entry.batchId}, read ${batch.batch_id}`);
    return batch;
  }

  /**
   * Removes the `n` oldest entries (and counts `unwritten` batches as dropped) with one atomic cursor
   * write, then deletes segment files wholly before the new cursor. Memory changes only after the
   * cursor write succeeded.
   */
  private async remove(
    n: number,
    how: Removal,
    unwritten: readonly Omit<Entry, 'segment' | 'offset' | 'bytes'>[] = [],
    seqFloor?: number,
  ) {
    const removed = this.entries.slice(0, n);
    const next = this.entries[n];
    const dropped = how === 'drop' ? [...removed, ...unwritten] : [];
    const lastRemoved = removed.at(-1);
    const lastIndex = this.lastSegmentIndex();
    const lastSize = lastIndex === undefined ? undefined : this.segments.get(lastIndex);
    // Emptied: the cursor goes to the end of the last segment while it has room, so the next append
    // goes on in it; deleting it and creating the next would cost 3 more fsyncs and 2 opens per send.
    const keepLast =
      lastIndex !== undefined &&
      lastSize !== undefined &&
      lastSize < this.segmentBytes &&
      (lastRemoved === undefined || lastRemoved.segment <= lastIndex);
    const position = next
      ? { segment: next.segment, offset: next.offset }
      : lastRemoved
        ? keepLast
          ? { segment: lastIndex, offset: lastSize }
          : { segment: (lastIndex ?? this.cursor.segment) + 1, offset: 0 }
        : { segment: this.cursor.segment, offset: this.cursor.offset };
    // The highest seq that left (or, for damaged bytes, may have left): the next seq starts above it.
    const seqs = [
      lastRemoved?.seq ?? this.cursor.lastRemovedSeq,
      seqFloor,
      ...unwritten.map((e) => e.seq).filter((seq) => seq >= 0),
    ].filter((x): x is number => x !== undefined);
    const lastRemovedSeq = seqs.length > 0 ? Math.max(...seqs) : undefined;
    const build = (base: SpoolCursor): SpoolCursor => {
      const unreported = mergeDropped(base.unreported, dropped);
      return {
        ...position,
        ...(lastRemovedSeq !== undefined ? { lastRemovedSeq } : {}),
        droppedTotal: base.droppedTotal + dropped.length,
        ...(unreported ? { unreported } : {}),
      };
    };
    const epoch = this.reportEpoch;
    await this.writeCursorNow(build(this.cursor));
    // A report may have been taken while the cursor was being written: rebuild from the current one.
    this.cursor = build(this.cursor);
    this.cursorDirty = epoch !== this.reportEpoch;
    this.entries.splice(0, n);
    for (const e of removed) this.bytes -= e.bytes;
    for (const e of unwritten) if (e.seq >= 0) this.lastSeq = Math.max(this.lastSeq ?? e.seq, e.seq);
    if (seqFloor !== undefined) this.lastSeq = Math.max(this.lastSeq ?? seqFloor, seqFloor);
    const garbage = [...this.segments.keys()].filter((index) => index < position.segment);
    if (garbage.length === 0) return;
    if (this.active && garbage.includes(this.active.index)) {
      const active = this.active;
      this.active = undefined;
      await active.handle.close();
    }
    for (const index of garbage) {
      this.segments.delete(index);
      await unlinkIfExists(join(this.dir, segmentFileName(index)));
    }
    await syncDir(this.dir);
  }

  private async writeCursorNow(cursor: SpoolCursor): Promise<void> {
    await writeCursor(this.cursorFile, cursor);
    this.cursorDirty = false;
  }

  private lastSegmentIndex(): number | undefined {
    let last: number | undefined;
    for (const index of this.segments.keys()) if (last === undefined || index > last) last = index;
    return last;
  }

  /** The segment to append to: the open one while below `segmentBytes`, else the last existing one, else a new one. */
  private async activeSegment(): Promise<ActiveSegment> {
    if (this.active && this.active.size < this.segmentBytes) return this.active;
    if (this.active) {
      const full = this.active;
      this.active = undefined;
      await full.handle.close();
    }
    const last = this.lastSegmentIndex();
    const lastSize = last === undefined ? undefined : this.segments.get(last);
    if (last !== undefined && lastSize !== undefined && lastSize < this.segmentBytes) {
      const handle = await open(join(this.dir, segmentFileName(last)), 'a');
      this.active = { index: last, handle, size: lastSize };
      return this.active;
    }
    const index = last === undefined ? this.cursor.segment : last + 1;
    const handle = await open(join(this.dir, segmentFileName(index)), 'wx');
    try {
      await handle.write(SEGMENT_MAGIC, 0, SEGMENT_MAGIC.length);
      await handle.sync();
      await syncDir(this.dir);
    } catch (error) {
      await handle.close();
      await unlinkIfExists(join(this.dir, segmentFileName(index)));
      throw error;
    }
    this.segments.set(index, SEGMENT_MAGIC.length);
    this.active = { index, handle, size: SEGMENT_MAGIC.length };
    return this.active;
  }

  /** After a failed append: cut the segment back to its last whole record, or stop appending to it. */
  private async undoPartialWrite(segment: ActiveSegment): Promise<void> {
    try {
      await segment.handle.truncate(segment.size);
      await segment.handle.datasync();
    } catch {
      // The torn tail stays; open() truncates it. Appends go to a new segment from now on.
      this.segments.set(segment.index, Number.POSITIVE_INFINITY);
      this.active = undefined;
      await segment.handle.close().catch(() => undefined);
    }
  }

  private async writeRejected(batch: Batch, reason: QuarantineReason): Promise<string> {
    await mkdir(this.rejectedDir, { recursive: true });
    const id = String(batch.batch_id).replace(/[^A-Za-z0-9-]/g, '_');
    const file = join(this.rejectedDir, `${batch.seq}-${id}.json`);
    const body = { rejected_at: this.clock().toISOString(), reason, batch };
    await writeFileAtomic(file, `${JSON.stringify(body, null, 2)}\n`);
    const kept = (await readdir(this.rejectedDir))
      .filter((name) => /^\d+-.*\.json$/.test(name))
      .sort((a, b) => Number.parseInt(a, 10) - Number.parseInt(b, 10) || a.localeCompare(b));
    for (const name of kept.slice(0, Math.max(0, kept.length - this.maxRejectedFiles)))
      await unlinkIfExists(join(this.rejectedDir, name));
    return file;
  }

  /** Rebuilds the queue from disk: cursor, then every segment from the cursor on. */
  private async recover(): Promise<void> {
    await unlinkIfExists(`${this.cursorFile}.tmp`);
    let cursor: SpoolCursor | undefined;
    try {
      cursor = await readCursor(this.cursorFile);
    } catch (error) {
      if (!(error instanceof RangeError)) throw error;
      this.warn('spool cursor unreadable; every segment is replayed (the API stores repeats once)', {
        error: error.message,
      });
    }
    const indices = (await readdir(this.dir))
      .map(parseSegmentFileName)
      .filter((index): index is number => index !== undefined)
      .sort((a, b) => a - b);
    this.cursor = cursor ?? { ...INITIAL_CURSOR, segment: indices[0] ?? 0 };
    this.lastSeq = this.cursor.lastRemovedSeq;
    let dirChanged = false;
    const damaged: Omit<Entry, 'segment' | 'offset' | 'bytes'>[] = [];
    let seqFloor: number | undefined;
    const lose = (bytes: number, prev?: KnownRecord, next?: KnownRecord): void => {
      const loss = estimateLoss(bytes, prev, next);
      for (const b of loss.batches) damaged.push({ seq: b.seq, batchId: '', atMs: 0, windows: b.windows });
      if (loss.seqCeiling !== undefined) seqFloor = Math.max(seqFloor ?? loss.seqCeiling, loss.seqCeiling);
    };
    let prev: KnownRecord | undefined;
    let foreignBytes = 0;
    for (const index of indices) {
      const file = join(this.dir, segmentFileName(index));
      if (index < this.cursor.segment) {
        await unlinkIfExists(file);
        dirChanged = true;
        continue;
      }
      const data = await readFile(file);
      let scan: ReturnType<typeof scanSegment>;
      try {
        scan = scanSegment(file, data);
      } catch (error) {
        if (!(error instanceof SpoolCorruptError)) throw error;
        // A bad magic: ours with a damaged header when intact batch records follow it (the magic is
        // rewritten and the records kept), else a file this spool never wrote (set aside, counted).
        const behind =
          data.length > SEGMENT_MAGIC.length
            ? scanSegment(file, Buffer.concat([SEGMENT_MAGIC, data.subarray(SEGMENT_MAGIC.length)]))
            : undefined;
        if (behind?.records.some((r) => readMeta(r.payload, this.clock()) !== undefined)) {
          await writeAt(file, 0, SEGMENT_MAGIC);
          this.warn('spool segment header damaged; rewritten, its records kept', {
            segment: segmentFileName(index),
          });
          scan = behind;
        } else {
          const moved = await this.setAside(file, index);
          foreignBytes += data.length;
          // Counted as one batch of unknown size: what (if anything) it held is unknowable.
          damaged.push({ seq: -1, batchId: '', atMs: 0, windows: 0 });
          this.warn('spool file is not a spool segment; moved aside, the agent goes on', {
            segment: segmentFileName(index),
            moved_to: moved,
            bytes: data.length,
            error: error.message,
          });
          dirChanged = true;
          continue;
        }
      }
      if (scan.validBytes === 0) {
        // Created but its magic never reached the disk: no record can be in it.
        await unlinkIfExists(file);
        dirChanged = true;
        continue;
      }
      const known = scan.records.map((record) => ({
        record,
        meta: isFiller(record.payload) ? undefined : readMeta(record.payload, this.clock()),
        filler: isFiller(record.payload),
      }));
      const knownAt = (i: number): KnownRecord | undefined => {
        const k = known[i];
        return k?.meta === undefined ? undefined : { ...k.meta, bytes: k.record.bytes };
      };
      const skipped = (offset: number): boolean =>
        index === this.cursor.segment && offset < this.cursor.offset;
      // Damage between intact records: each region loses only what it held, then is overwritten
      // with a filler record so a later open does not count it again.
      for (const region of scan.damaged) {
        if (skipped(region.offset)) continue;
        const after = known.findIndex((k) => k.record.offset > region.offset);
        const before = after === -1 ? known.length - 1 : after - 1;
        lose(region.bytes, knownAt(before) ?? (before < 0 ? prev : undefined), knownAt(after));
        await this.fill(file, region.offset, region.bytes);
        this.warn('spool segment has a damaged record; it alone is dropped and counted', {
          segment: segmentFileName(index),
          offset: region.offset,
          bytes: region.bytes,
        });
      }
      if (scan.tail !== 'clean') {
        await truncateFile(file, scan.validBytes);
        // A torn tail is a write cut short, never acknowledged: no loss. Only the last segment can
        // have one in normal operation; elsewhere a bad tail is counted (over-reported, never silent).
        const torn = scan.tail === 'torn' && index === indices.at(-1);
        const last = known.length > 0 ? knownAt(known.length - 1) : prev;
        if (!torn) lose(data.length - scan.validBytes, last);
        this.warn(
          torn
            ? 'spool segment ended in a torn record (a write cut short); truncated'
            : 'spool segment ends in damaged bytes with no intact record after them; dropped and counted',
          { segment: segmentFileName(index), valid_bytes: scan.validBytes },
        );
      }
      for (const { record, meta, filler } of known) {
        if (filler || (meta === undefined && skipped(record.offset))) continue;
        if (!meta) {
          damaged.push({ seq: -1, batchId: '', atMs: 0, windows: prev?.windows ?? 0 });
          continue;
        }
        prev = { ...meta, bytes: record.bytes };
        if (skipped(record.offset)) continue;
        this.entries.push({ segment: index, offset: record.offset, bytes: record.bytes, ...meta });
        this.bytes += record.bytes;
        this.lastSeq = Math.max(this.lastSeq ?? meta.seq, meta.seq);
      }
      this.segments.set(index, scan.validBytes);
    }
    if (foreignBytes > 0) {
      // A set-aside file may have held batches of this agent: skip past every seq it could have held.
      const top = Math.max(seqFloor ?? -1, this.lastSeq ?? -1);
      if (top >= 0) seqFloor = top + Math.ceil(foreignBytes / MIN_RECORD_BYTES);
    }
    if (dirChanged) await syncDir(this.dir);
    if (damaged.length > 0 || seqFloor !== undefined) await this.remove(0, 'drop', damaged, seqFloor);
    await this.enforceLimits(0);
  }

  /** Moves a file that is not a spool segment into `damaged/` (a unique name), durably. */
  private async setAside(file: string, index: number): Promise<string> {
    const dir = join(this.dir, DAMAGED_DIR);
    await mkdir(dir, { recursive: true });
    let target = join(dir, segmentFileName(index));
    for (let n = 1; await exists(target); n++) target = join(dir, `${segmentFileName(index)}.${n}`);
    await rename(file, target);
    await syncDir(dir);
    return target;
  }

  /** Overwrites a counted damaged region with one filler record (left as it is when too small to hold one). */
  private async fill(file: string, offset: number, bytes: number): Promise<void> {
    const filler = encodeFiller(bytes);
    if (filler !== undefined) await writeAt(file, offset, filler);
  }
}

/** Seq, id, time and flush windows of a record's batch JSON; undefined when it is not a batch. */
function readMeta(payload: Buffer, now: Date): Omit<Entry, 'segment' | 'offset' | 'bytes'> | undefined {
  let batch: Batch;
  try {
    batch = JSON.parse(payload.toString('utf8')) as Batch;
  } catch {
    return undefined;
  }
  if (typeof batch !== 'object' || batch === null || typeof batch.batch_id !== 'string') return undefined;
  if (typeof batch.seq !== 'number' || !Array.isArray(batch.windows)) return undefined;
  return {
    seq: batch.seq,
    batchId: batch.batch_id,
    atMs: batchTimeMs(batch, now),
    windows: flushWindows(batch),
  };
}

/** A batch's time for the age bound: its `sent_at`, or now when that does not parse. */
function batchTimeMs(batch: Batch, now: Date): number {
  const ms = Date.parse(batch.sent_at);
  return Number.isNaN(ms) ? now.getTime() : ms;
}

function flushWindows(batch: Batch): number {
  return batch.windows.filter((w) => w.kind !== 'horizon').length;
}

function mergeDropped(
  base: DroppedReport | undefined,
  dropped: readonly Omit<Entry, 'segment' | 'offset' | 'bytes'>[],
): DroppedReport | undefined {
  if (dropped.length === 0) return base;
  const seqs = dropped.map((d) => d.seq).filter((s) => s >= 0);
  const firstSeq = base?.firstSeq ?? (seqs.length > 0 ? Math.min(...seqs) : undefined);
  const lastSeq = seqs.length > 0 ? Math.max(...seqs) : base?.lastSeq;
  return {
    batches: (base?.batches ?? 0) + dropped.length,
    windows: (base?.windows ?? 0) + dropped.reduce((sum, d) => sum + d.windows, 0),
    ...(firstSeq !== undefined ? { firstSeq } : {}),
    ...(lastSeq !== undefined ? { lastSeq } : {}),
  };
}

async function truncateFile(file: string, bytes: number): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.truncate(bytes);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

/** Writes `bytes` at `offset` of an existing file, durably (fdatasync). */
async function writeAt(file: string, offset: number, bytes: Buffer): Promise<void> {
  const handle = await open(file, 'r+');
  try {
    await handle.write(bytes, 0, bytes.length, offset);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

async function exists(file: string): Promise<boolean> {
  try {
    await stat(file);
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}

async function unlinkIfExists(file: string): Promise<void> {
  try {
    await unlink(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
  }
}

function checkRange(name: string, value: number, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    throw new RangeError(
      `Expected \`${name}\` to be a number in ${min}..${max}, got \`${value}\` (${typeof value})`,
    );
  return value;
}
