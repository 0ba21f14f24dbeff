/**
 * Bounds, defaults and file names of the on-disk spool (agent/spool/spool.ts), one doc line each.
 */

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

/** Name of the append mark file (`append-mark.ts`): the durable high-water mark of acknowledged appends. */
export const MARK_FILE = 'append.mark';

/** Name of the directory batches refused with 401/403 wait in to be resent (`held-batches.ts`). */
export const HELD_DIR = 'held';

/** Name of the quarantine directory in the spool directory. */
export const REJECTED_DIR = 'rejected';

/** Name of the directory a segment file that is not a spool segment (bad magic) is moved to on open. */
export const DAMAGED_DIR = 'damaged';
