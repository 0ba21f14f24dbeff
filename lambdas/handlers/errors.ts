/**
 * A request the ingest API refuses with a 4xx. `status` is the HTTP status, `path` the first bad
 * field (or `(root)`), `message` what was expected and what came. Nothing of the batch is stored.
 */
export class IngestRequestError extends Error {
  override readonly name = 'IngestRequestError';
  /** HTTP status: 400 invalid, 403 identity mismatch, 413 too large, 415 unsupported encoding. */
  readonly status: 400 | 403 | 413 | 415;
  /** The first bad field, or `(root)` for the body itself. */
  readonly path: string;

  /**
   * @param status - HTTP status to answer with
   * @param path - the first bad field
   * @param message - what was expected and what came
   * @param options - `cause`
   */
  constructor(status: 400 | 403 | 413 | 415, path: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.path = path;
  }
}

/**
 * One or more alerts of a stored batch could not be published (SNS failed). The batch is stored and its
 * alert leases freed; the caller answers 5xx so the agent retries the (idempotent) batch and the alerts go
 * out then, instead of being suppressed for the cooldown.
 */
export class AlertPublishError extends Error {
  override readonly name = 'AlertPublishError';
  /** The ids of the alerts that did not go out. */
  readonly alertIds: readonly string[];

  /**
   * @param alertIds - the alerts that failed
   * @param message - what failed and what happens next
   * @param options - `cause`
   */
  constructor(alertIds: readonly string[], message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.alertIds = alertIds;
  }
}
