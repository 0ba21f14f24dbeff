import { join } from 'node:path';
import type { Batch } from '../../lambdas/contract';
import { type AppendMark, AppendMarkFile } from './append-mark';
import { CURSOR_FILE, HELD_DIR, MARK_FILE, REJECTED_DIR } from './constants';
import { type QuarantineReason, writeDeadLetter } from './dead-letter';
import { syncDir } from './durable-file';
import { SpoolClosedError, SpoolOrderError } from './errors';
import { recoverSpool } from './recover-spool';
import {
  encodeRecord,
  MAX_RECORD_PAYLOAD_BYTES,
  RECORD_HEADER_BYTES,
  segmentFileName,
} from './segment-format';
import {
  type ActiveSegment,
  appendRecord,
  createSegment,
  openSegmentForAppend,
  readRecordAt,
  unlinkIfExists,
} from './segment-io';
import {
  addDropped,
  type DroppedReport,
  INITIAL_CURSOR,
  type SpoolCursor,
  writeCursor,
} from './spool-cursor';
import { batchTimeMs, flushWindows, type SpoolEntry, type SpoolEntryMeta } from './spool-entry';
import type { ResolvedSpoolOptions } from './spool-options';

/** What {@link SpoolQueue.stats} returns. */
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
 * fdatasync'd and then the append mark (`append.mark`, `append-mark.ts`) is moved past it (a new
 * segment's file and directory entry are fsync'd before its first record); on open, bytes after the
 * mark are a torn write never acknowledged to the caller (cut off), and acknowledged records before
 * it that no longer read back are dropped and counted (`recover-spool.ts`). A batch leaves only by
 * an atomic cursor replacement (write-tmp + fsync + rename + fsync of the directory) done after the
 * 2xx; segments wholly before the cursor are deleted after it, and again on open. A crash between the
 * 2xx and the cursor write re-sends that batch, which the API stores once (same `batch_id`). Unreported
 * drops travel in the same cursor write, so a crash never makes a drop silent.
 *
 * Methods are serialized: concurrent calls run one after another in call order. One process per
 * directory.
 *
 * This file is the queue and its cursor; the rest of the room, one concern a file: the agent's
 * `Spool` (`spool.ts`: this queue plus held and rejected batches, `held-batches.ts`), options
 * (`spool-options.ts`), recovery at open (`recover-spool.ts`), segment file I/O (`segment-io.ts`,
 * the bytes in `segment-format.ts`), the cursor file (`spool-cursor.ts`), dead letters
 * (`dead-letter.ts`).
 *
 * Opened through its subclass `Spool.open` (`spool.ts`).
 */
export class SpoolQueue {
  protected entries: SpoolEntry[] = [];
  /** Existing segment files: index → valid bytes. */
  private segments = new Map<number, number>();
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
  protected readonly heldDir: string;
  private readonly markFile: string;
  /** The append mark file, open after recovery; the mark last written to it. */
  private markHandle: AppendMarkFile | undefined;
  private mark: AppendMark | undefined;

  /** The spool directory. */
  readonly dir: string;
  protected readonly maxBytes: number;
  protected readonly maxAgeS: number;
  private readonly segmentBytes: number;
  private readonly maxRejectedFiles: number;
  protected readonly clock: () => Date;
  protected readonly warn: (message: string, data?: Record<string, unknown>) => void;

  protected constructor(options: ResolvedSpoolOptions) {
    this.dir = options.dir;
    this.maxBytes = options.maxBytes;
    this.maxAgeS = options.maxAgeS;
    this.segmentBytes = options.segmentBytes;
    this.maxRejectedFiles = options.maxRejectedFiles;
    this.clock = options.clock;
    this.warn = options.warn;
    this.cursorFile = join(this.dir, CURSOR_FILE);
    this.rejectedDir = join(this.dir, REJECTED_DIR);
    this.markFile = join(this.dir, MARK_FILE);
    this.heldDir = join(this.dir, HELD_DIR);
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
      const mark: AppendMark = {
        segment: segment.index,
        bytes: segment.size + record.length,
        lastSeq: Math.max(this.lastSeq ?? batch.seq, batch.seq),
        firstSeq: this.mark?.segment === segment.index ? this.mark.firstSeq : batch.seq,
        windows: meta.windows,
      };
      try {
        await appendRecord(segment, record);
        // Acknowledged only once the mark says so: a record after the mark is a torn write at open.
        await this.writeMark(mark);
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
        const entry = this.entries[i] as SpoolEntry;
        if (bytes + entry.bytes > maxBytes) break;
        try {
          out.push(await readRecordAt(this.dir, entry));
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
        const markHandle = this.markHandle;
        this.active = undefined;
        this.markHandle = undefined;
        await active?.handle.close();
        await markHandle?.close();
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  protected exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.chain.then(() => {
      if (this.closed) throw new SpoolClosedError(this.dir);
      return fn();
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  protected cutoffMs(): number {
    return this.clock().getTime() - this.maxAgeS * 1000;
  }

  protected isHead(batchId: string): boolean {
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
  protected async readHead(): Promise<Batch | undefined> {
    for (;;) {
      const head = this.entries[0];
      if (!head) return undefined;
      try {
        return await readRecordAt(this.dir, head);
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

  /**
   * Removes the `n` oldest entries (and counts `unwritten` batches as dropped) with one atomic cursor
   * write, then deletes segment files wholly before the new cursor. Memory changes only after the
   * cursor write succeeded.
   */
  protected async remove(
    n: number,
    how: Removal,
    unwritten: readonly SpoolEntryMeta[] = [],
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
      const unreported = addDropped(base.unreported, dropped);
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

  /** Writes the append mark durably (`append-mark.ts`). */
  private async writeMark(mark: AppendMark): Promise<void> {
    if (!this.markHandle) throw new Error(`spool ${this.dir}: append mark not open`);
    await this.markHandle.write(mark);
    this.mark = mark;
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
      this.active = await openSegmentForAppend(this.dir, last, lastSize);
      return this.active;
    }
    const index = last === undefined ? this.cursor.segment : last + 1;
    const created = await createSegment(this.dir, index);
    this.segments.set(index, created.size);
    this.active = created;
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

  protected writeRejected(batch: Batch, reason: QuarantineReason): Promise<string> {
    return writeDeadLetter(batch, reason, {
      dir: this.rejectedDir,
      maxFiles: this.maxRejectedFiles,
      now: this.clock(),
    });
  }

  /**
   * Rebuilds the queue from disk (`recover-spool.ts`), then drops, with one cursor write, what
   * damage lost and what is past the bounds.
   */
  protected async recover(): Promise<void> {
    const recovered = await recoverSpool({
      dir: this.dir,
      cursorFile: this.cursorFile,
      markFile: this.markFile,
      clock: this.clock,
      warn: this.warn,
    });
    this.cursor = recovered.cursor;
    this.entries = recovered.entries;
    this.segments = recovered.segments;
    this.bytes = recovered.bytes;
    this.lastSeq = recovered.lastSeq;
    const { damaged, seqFloor } = recovered;
    if (damaged.length > 0 || seqFloor !== undefined) await this.remove(0, 'drop', damaged, seqFloor);
    await this.enforceLimits(0);
    // The mark restated for the repaired files, after the losses are in the cursor (a crash between
    // the two counts them again on the next open: over-reported, never silent).
    this.markHandle = await AppendMarkFile.open(this.markFile, recovered.markGeneration);
    const last = this.lastSegmentIndex();
    if (this.lastSeq !== undefined) {
      const inLast = this.entries.find((e) => e.segment === last);
      await this.writeMark({
        // No segment left: nothing acknowledged is on disk (0 bytes) in the one the next append creates.
        segment: last ?? this.cursor.segment,
        bytes: last === undefined ? 0 : (this.segments.get(last) ?? 0),
        lastSeq: this.lastSeq,
        firstSeq: inLast?.seq ?? this.lastSeq + 1,
        windows: this.entries.at(-1)?.windows ?? recovered.markWindows,
      });
    }
  }
}
