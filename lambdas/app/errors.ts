/**
 * Errors of the application services (`lambdas/app`). Each carries `name`, `cause` and typed data,
 * and its message says what was expected, what came, and what to do.
 */

/**
 * One or more alerts could not be published (the alert sink failed). Their leases are freed and
 * the rest of the work is done first: at ingest the batch is stored, and the caller answers 5xx so
 * the agent retries the (idempotent) batch and the alerts go out then, instead of being suppressed
 * for the cooldown; in the fleet evaluator the run fails visibly and the next run sends them.
 */
export class UnpublishedAlertsError extends Error {
  override readonly name = 'UnpublishedAlertsError';
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
