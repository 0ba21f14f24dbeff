/**
 * Errors of the agent room. Every class has an `Error` suffix, a fixed `name`, the underlying
 * `cause` and typed data; messages say what was expected, what came and what to do.
 * Expected hardware faults are values, not errors: these are for failed I/O and bad input.
 */

/** Base class of every agent error, so callers can catch the room's errors in one `instanceof`. */
export class AgentError extends Error {
  override readonly name: string = 'AgentError';

  /**
   * @param message - what was expected, what came, what to do
   * @param options - `cause`, the underlying error
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
  }
}

/** The EC2 instance metadata service (IMDSv2) could not be reached or answered wrongly. */
export class ImdsUnavailableError extends AgentError {
  override readonly name = 'ImdsUnavailableError';
  /** The IMDS path that failed, e.g. `/latest/meta-data/instance-id` or `/latest/api/token`. */
  readonly path: string;
  /** HTTP status of the failed answer; absent for network errors and timeouts. */
  readonly status: number | undefined;

  /**
   * @param path - the IMDS path that failed
   * @param message - what was expected and what came
   * @param options - `status` of the answer, `cause`
   */
  constructor(path: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(
      `IMDSv2 ${path}: ${message}. Run on EC2 with IMDSv2 enabled (hop limit 2 in containers), or pass an identity override`,
      options,
    );
    this.path = path;
    this.status = options?.status;
  }
}

/** A dcgm-exporter scrape failed (network, timeout or a non-2xx answer). */
export class DcgmScrapeError extends AgentError {
  override readonly name = 'DcgmScrapeError';
  /** The URL scraped. */
  readonly url: string;
  /** HTTP status of the answer; absent for network errors and timeouts. */
  readonly status: number | undefined;

  /**
   * @param url - the URL scraped
   * @param message - what was expected and what came
   * @param options - `status` of the answer, `cause`
   */
  constructor(url: string, message: string, options?: { status?: number; cause?: unknown }) {
    super(
      `dcgm-exporter scrape of ${url}: ${message}. Check that dcgm-exporter runs and listens there (default :9400/metrics)`,
      options,
    );
    this.url = url;
    this.status = options?.status;
  }
}

/** The JSON error body the API returns with a 4xx: `{ error, path }` (docs/design.md §3). */
export interface ApiErrorBody {
  /** What was wrong, as the API says it. */
  readonly error?: string;
  /** The first bad field, e.g. `windows[0].metrics.gpu_util`. */
  readonly path?: string;
}

/** The API refused a batch with a 4xx other than 429: retrying the same batch cannot succeed. */
export class SendRejectedError extends AgentError {
  override readonly name = 'SendRejectedError';
  /** HTTP status: 400 invalid, 403 identity mismatch, 413 too large, … */
  readonly status: number;
  /** The API's JSON error body, when it sent one. */
  readonly body: ApiErrorBody | undefined;
  /** The batch refused. */
  readonly batchId: string;

  /**
   * @param batchId - the refused batch's `batch_id`
   * @param status - the HTTP status (4xx, not 429)
   * @param body - the API's JSON error, if any
   */
  constructor(batchId: string, status: number, body: ApiErrorBody | undefined) {
    const what = body?.error ? `: ${body.error}${body.path ? ` (at ${body.path})` : ''}` : '';
    super(
      `batch ${batchId} refused with HTTP ${status}${what}. Expected 202; the batch breaks the contract or the caller's identity does not match host.instance_id: fix the agent or its role, do not retry`,
    );
    this.status = status;
    this.body = body;
    this.batchId = batchId;
  }
}

/** A batch could not be delivered after every retry (429, 5xx or network errors). */
export class SendFailedError extends AgentError {
  override readonly name = 'SendFailedError';
  /** The batch not delivered. */
  readonly batchId: string;
  /** Attempts made, ≥ 1. */
  readonly attempts: number;
  /** HTTP status of the last answer; absent when the last attempt got none (network error). */
  readonly lastStatus: number | undefined;

  /**
   * @param batchId - the batch's `batch_id`
   * @param attempts - attempts made
   * @param options - `lastStatus`, `cause` (the last error)
   */
  constructor(batchId: string, attempts: number, options?: { lastStatus?: number; cause?: unknown }) {
    const last = options?.lastStatus !== undefined ? `HTTP ${options.lastStatus}` : 'no answer';
    super(
      `batch ${batchId} not delivered after ${attempts} attempts (last: ${last}). Expected 202; keep the batch (spool) and retry later`,
      options,
    );
    this.batchId = batchId;
    this.attempts = attempts;
    this.lastStatus = options?.lastStatus;
  }
}

/** A replay manifest is missing, not JSON, breaks the schema, or names a file that cannot be read. */
export class ReplayManifestError extends AgentError {
  override readonly name = 'ReplayManifestError';
  /** The manifest file. */
  readonly file: string;
  /** The bad field, e.g. `hosts[1].instance_id`, or `(root)`. */
  readonly field: string;

  /**
   * @param file - the manifest file
   * @param field - the bad field, JS notation
   * @param message - what was expected and what came
   * @param options - `cause`
   */
  constructor(file: string, field: string, message: string, options?: { cause?: unknown }) {
    super(`replay manifest ${file}: ${field}: ${message}`, options);
    this.file = file;
    this.field = field;
  }
}

/**
 * A line of a captured agent batches file (`parseCapturedBatches`, agent/playback/captured-batches.ts)
 * is not JSON, not a batch the wire contract accepts, or not replayable; `line` is 1-based.
 */
export class CapturedBatchesError extends AgentError {
  override readonly name = 'CapturedBatchesError';
  /** The 1-based line of the file. */
  readonly line: number;

  /**
   * @param line - the 1-based line
   * @param message - what was expected and what came
   * @param options - `cause`
   */
  constructor(line: number, message: string, options?: { cause?: unknown }) {
    super(`line ${line}: ${message}`, options);
    this.line = line;
  }
}

/**
 * An option of a playback (`playBatches`) or of a simulated host is out of its documented range.
 * The message names the option, the expected range and the value given, e.g.
 * ``Expected `flushIntervalS` to be a number in 1..3600, got `0` (number)``.
 */
export class PlaybackOptionsError extends AgentError {
  override readonly name = 'PlaybackOptionsError';
  /** The option that was refused, e.g. `flushIntervalS` or `hosts[2].behaviour`. */
  readonly option: string;
  /** The value it was given. */
  readonly value: unknown;

  /**
   * @param option - the option's name
   * @param expected - what it must be, e.g. `an integer in 100..60000`
   * @param value - what it was given
   */
  constructor(option: string, expected: string, value: unknown) {
    const shown = value instanceof Date ? value.toISOString() : String(value);
    super(`Expected \`${option}\` to be ${expected}, got \`${shown}\` (${typeof value})`);
    this.option = option;
    this.value = value;
  }
}
