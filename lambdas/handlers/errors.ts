/**
 * A request the ingest API refuses with a 4xx. `status` is the HTTP status, `path` the first bad
 * field (or `(root)`), `message` what was expected and what came. Nothing of the batch is stored.
 */
export class IngestRequestError extends Error {
  override readonly name = 'IngestRequestError';
  /** HTTP status: 400 invalid, 403 identity refused, 413 too large, 415 a media type other than application/json. */
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
