import { randomUUID } from 'node:crypto';
import {
  type AgentInfo,
  type Batch,
  type EfaWindow,
  type GpuEvent,
  type GpuWindow,
  type Host,
  MAX_BODY_DECOMPRESSED_BYTES,
  MAX_EFA_PORTS_PER_BATCH,
  MAX_EVENTS_PER_BATCH,
  MAX_WINDOWS_PER_BATCH,
  SCHEMA_V1,
} from '../../lambdas/contract';
import { systemClock } from '../clock';

/**
 * Largest serialized batch the batcher builds by default, bytes: 1 MiB of raw JSON. The API takes
 * ≤ 1 MiB compressed and ≤ `MAX_BODY_DECOMPRESSED_BYTES` (≈ 2.97 MiB, sized so the body fits one
 * 6 MB Lambda event behind API Gateway) decompressed; a raw body ≤ 1 MiB satisfies both, since gzip
 * never grows JSON by more than a few bytes per 16 KiB block.
 */
export const DEFAULT_MAX_BATCH_BYTES = 1024 * 1024;

/** Room kept in each batch for the envelope's variable parts (seq digits, ids), bytes. */
const ENVELOPE_SLACK_BYTES = 256;

/** Options of {@link BatchBuilder}. */
export interface BatchBuilderOptions {
  /** First `seq` to hand out, integer ≥ 0 (a restarted agent resumes from its spool's last seq + 1). @default 0 */
  readonly startSeq?: number;
  /** Makes `batch_id`s (UUIDs). @default crypto.randomUUID */
  readonly randomUUID?: () => string;
  /** The clock for `sent_at`. @default systemClock */
  readonly clock?: () => Date;
  /**
   * Largest serialized batch, bytes, 4096..`MAX_BODY_DECOMPRESSED_BYTES` (the API's decompressed
   * limit). @default {@link DEFAULT_MAX_BATCH_BYTES} (1 MiB)
   */
  readonly maxBatchBytes?: number;
}

/** What one {@link BatchBuilder.build} call packs. */
export interface BatchInput {
  /** The sender's EC2 identity. */
  readonly host: Host;
  /** The agent's self-description. */
  readonly agent: AgentInfo;
  /** GPU windows (flush and horizon), any number. */
  readonly windows: readonly GpuWindow[];
  /** EFA windows, any number. */
  readonly efa?: readonly EfaWindow[];
  /** Events, any number; they go into the earliest batches with room. */
  readonly events?: readonly GpuEvent[];
  /** `sent_at` of these batches (replay sets it to the window end). @default the builder's clock */
  readonly sentAt?: Date;
}

interface Bin {
  windows: GpuWindow[];
  efa: EfaWindow[];
  events: GpuEvent[];
  bytes: number;
}

/**
 * Packs windows, EFA windows and events into contract batches that respect every per-batch limit
 * (≤ 512 windows, ≤ 256 events, ≤ 384 EFA ports, serialized JSON ≤ 1 MiB), keeping all windows of
 * one window end together where they fit. Hands out a per-agent monotonic `seq`.
 *
 * @example
 * const builder = new BatchBuilder({ startSeq: 42 });
 * const batches = builder.build({ host, agent, windows, events });
 */
export class BatchBuilder {
  private seq: number;
  private readonly makeId: () => string;
  private readonly clock: () => Date;
  private readonly maxBytes: number;

  /**
   * @param opts - start seq, id maker, clock, size limit
   * @throws {RangeError} when `startSeq` is not an integer ≥ 0 or `maxBatchBytes` is outside
   *   4096..`MAX_BODY_DECOMPRESSED_BYTES`
   */
  constructor(opts: BatchBuilderOptions = {}) {
    const start = opts.startSeq ?? 0;
    if (!Number.isSafeInteger(start) || start < 0)
      throw new RangeError(`Expected \`startSeq\` to be an integer >= 0, got \`${start}\` (${typeof start})`);
    const maxBytes = opts.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
    if (!Number.isInteger(maxBytes) || maxBytes < 4096 || maxBytes > MAX_BODY_DECOMPRESSED_BYTES)
      throw new RangeError(
        `Expected \`maxBatchBytes\` to be an integer in 4096..${MAX_BODY_DECOMPRESSED_BYTES} (the API's decompressed limit), got \`${maxBytes}\` (${typeof maxBytes})`,
      );
    this.seq = start;
    this.makeId = opts.randomUUID ?? randomUUID;
    this.clock = opts.clock ?? systemClock;
    this.maxBytes = maxBytes;
  }

  /** The `seq` the next batch will get. */
  get nextSeq(): number {
    return this.seq;
  }

  /**
   * Builds the batches for one flush.
   *
   * @param input - host, agent, windows, EFA windows, events
   * @returns batches in order (windows grouped by window end, in the order the ends first appear);
   *   empty when there is nothing at all to send; at least one batch when there are events
   */
  build(input: BatchInput): Batch[] {
    const sentAt = (input.sentAt ?? this.clock()).toISOString();
    const envelope: Batch = {
      schema: SCHEMA_V1,
      batch_id: '00000000-0000-0000-0000-000000000000',
      seq: 0,
      sent_at: sentAt,
      host: input.host,
      agent: input.agent,
      windows: [],
      efa: [],
      events: [],
    };
    // Fast path, the common case (one flush of one host): everything fits one batch. One
    // serialisation instead of one per window, EFA entry and event.
    const efa = input.efa ?? [];
    const events = input.events ?? [];
    if (
      input.windows.length <= MAX_WINDOWS_PER_BATCH &&
      efa.length <= MAX_EFA_PORTS_PER_BATCH &&
      events.length <= MAX_EVENTS_PER_BATCH &&
      (input.windows.length > 0 || efa.length > 0 || events.length > 0) &&
      byteSize({ ...envelope, windows: input.windows, efa, events }) + ENVELOPE_SLACK_BYTES <= this.maxBytes
    ) {
      const batch: Batch = {
        ...envelope,
        batch_id: this.makeId(),
        seq: this.seq++,
        windows: [...input.windows],
      };
      if (efa.length > 0) batch.efa = [...efa];
      else delete batch.efa;
      if (events.length > 0) batch.events = [...events];
      else delete batch.events;
      return [batch];
    }
    const baseBytes = byteSize(envelope) + ENVELOPE_SLACK_BYTES;
    const bins: Bin[] = [];
    const newBin = (): Bin => {
      const bin = { windows: [], efa: [], events: [], bytes: baseBytes };
      bins.push(bin);
      return bin;
    };

    for (const group of groupByEnd(input.windows)) {
      const sizes = group.map((w) => byteSize(w) + 1);
      const groupBytes = sizes.reduce((a, b) => a + b, 0);
      const last = bins.at(-1);
      const fitsInLast =
        last !== undefined &&
        last.windows.length + group.length <= MAX_WINDOWS_PER_BATCH &&
        last.bytes + groupBytes <= this.maxBytes;
      // A window end that does not fit whole in the current batch starts a new one.
      if (last !== undefined && last.windows.length > 0 && !fitsInLast) newBin();
      // The group fits whole in an empty bin, or is split window by window.
      group.forEach((w, i) => {
        const size = sizes[i] ?? 0;
        let target = bins.at(-1) ?? newBin();
        if (
          target.windows.length >= MAX_WINDOWS_PER_BATCH ||
          (target.windows.length > 0 && target.bytes + size > this.maxBytes)
        )
          target = newBin();
        target.windows.push(w);
        target.bytes += size;
      });
    }
    placeAll(input.efa ?? [], bins, newBin, (b) => b.efa, MAX_EFA_PORTS_PER_BATCH, this.maxBytes);
    placeAll(input.events ?? [], bins, newBin, (b) => b.events, MAX_EVENTS_PER_BATCH, this.maxBytes);

    return bins.map((bin) => {
      const batch: Batch = {
        schema: SCHEMA_V1,
        batch_id: this.makeId(),
        seq: this.seq++,
        sent_at: sentAt,
        host: input.host,
        agent: input.agent,
        windows: bin.windows,
      };
      if (bin.efa.length > 0) batch.efa = bin.efa;
      if (bin.events.length > 0) batch.events = bin.events;
      return batch;
    });
  }
}

function byteSize(value: unknown): number {
  return Buffer.byteLength(JSON.stringify(value));
}

function groupByEnd(windows: readonly GpuWindow[]): GpuWindow[][] {
  const groups = new Map<string, GpuWindow[]>();
  for (const w of windows) {
    const key = new Date(w.end).toISOString();
    const group = groups.get(key);
    if (group) group.push(w);
    else groups.set(key, [w]);
  }
  return [...groups.values()];
}

function placeAll<T>(
  items: readonly T[],
  bins: Bin[],
  newBin: () => Bin,
  list: (bin: Bin) => T[],
  maxCount: number,
  maxBytes: number,
): void {
  let from = 0;
  for (const item of items) {
    const size = byteSize(item) + 1;
    let placed = false;
    for (let i = from; i < bins.length; i++) {
      const bin = bins[i] as Bin;
      if (list(bin).length < maxCount && bin.bytes + size <= maxBytes) {
        list(bin).push(item);
        bin.bytes += size;
        placed = true;
        break;
      }
      from = i + 1;
    }
    if (!placed) {
      const bin = newBin();
      list(bin).push(item);
      bin.bytes += size;
    }
  }
}
