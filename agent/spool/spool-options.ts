import { systemClock } from '../clock';
import {
  DEFAULT_MAX_REJECTED_FILES,
  DEFAULT_SPOOL_DIR,
  DEFAULT_SPOOL_MAX_AGE_S,
  DEFAULT_SPOOL_MAX_BYTES,
  DEFAULT_SPOOL_SEGMENT_BYTES,
  MAX_SPOOL_MAX_AGE_S,
} from './constants';

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

/** {@link SpoolOptions} checked, with every default filled in. */
export type ResolvedSpoolOptions = {
  readonly [K in Exclude<keyof SpoolOptions, 'onWarning'>]-?: NonNullable<SpoolOptions[K]>;
} & {
  /** `onWarning`, or a function that does nothing. */
  readonly warn: NonNullable<SpoolOptions['onWarning']>;
};

/**
 * Checks the spool's options and fills in the defaults.
 *
 * @param opts - see {@link SpoolOptions}
 * @returns every option, checked
 * @throws {RangeError} naming the option, when a number is out of its range
 */
export function resolveSpoolOptions(opts: SpoolOptions): ResolvedSpoolOptions {
  return {
    dir: opts.dir ?? DEFAULT_SPOOL_DIR,
    maxBytes: checkRange('maxBytes', opts.maxBytes ?? DEFAULT_SPOOL_MAX_BYTES, 1024, 2 ** 40),
    maxAgeS: checkRange('maxAgeS', opts.maxAgeS ?? DEFAULT_SPOOL_MAX_AGE_S, 60, MAX_SPOOL_MAX_AGE_S),
    segmentBytes: checkRange('segmentBytes', opts.segmentBytes ?? DEFAULT_SPOOL_SEGMENT_BYTES, 1024, 2 ** 30),
    maxRejectedFiles: checkRange(
      'maxRejectedFiles',
      opts.maxRejectedFiles ?? DEFAULT_MAX_REJECTED_FILES,
      1,
      100_000,
    ),
    clock: opts.clock ?? systemClock,
    warn: opts.onWarning ?? (() => undefined),
  };
}

function checkRange(name: string, value: number, min: number, max: number): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > max)
    throw new RangeError(
      `Expected \`${name}\` to be a number in ${min}..${max}, got \`${value}\` (${typeof value})`,
    );
  return value;
}
