import { AgentError } from '../errors';

/**
 * A spool file holds something this spool did not write: a segment without the `GSSPOOL1` magic.
 * Torn tails and bad records are repaired on open, not thrown; this is for foreign files.
 */
export class SpoolCorruptError extends AgentError {
  override readonly name = 'SpoolCorruptError';
  /** The file, absolute or relative to the process's working directory. */
  readonly file: string;
  /** Byte offset of the bad data in `file`, ≥ 0. */
  readonly offset: number;

  /**
   * @param file - the file
   * @param offset - byte offset of the bad data
   * @param message - what was expected and what came
   * @param options - `cause`
   */
  constructor(file: string, offset: number, message: string, options?: { cause?: unknown }) {
    super(
      `spool file ${file} at byte ${offset}: ${message}. Move the file out of the spool directory (it is not a gpu-sentinel segment) and restart the agent`,
      options,
    );
    this.file = file;
    this.offset = offset;
  }
}

/**
 * `ack` or `quarantine` named a batch that is in the spool but is not the oldest one: batches
 * leave the spool in order only.
 */
export class SpoolOrderError extends AgentError {
  override readonly name = 'SpoolOrderError';
  /** The `batch_id` the caller named. */
  readonly batchId: string;
  /** The `batch_id` of the oldest batch, the only one that may leave. */
  readonly oldestBatchId: string;

  /**
   * @param batchId - the batch named
   * @param oldestBatchId - the oldest batch in the spool
   */
  constructor(batchId: string, oldestBatchId: string) {
    super(
      `batch ${batchId} is not the oldest in the spool (the oldest is ${oldestBatchId}). Expected the batch returned by peek(): ack or quarantine the oldest first`,
    );
    this.batchId = batchId;
    this.oldestBatchId = oldestBatchId;
  }
}

/** A method was called on a spool after `close()`. */
export class SpoolClosedError extends AgentError {
  override readonly name = 'SpoolClosedError';
  /** The spool directory. */
  readonly dir: string;

  /** @param dir - the spool directory */
  constructor(dir: string) {
    super(`spool ${dir} is closed. Expected an open spool: call Spool.open() again`);
    this.dir = dir;
  }
}
