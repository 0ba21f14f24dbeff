/**
 * A remediation cannot be carried out as decided (e.g. the instance is in no Auto Scaling group,
 * so SetInstanceHealth would replace nothing). The handler escalates to a human.
 */
export class RemediationNotPossibleError extends Error {
  override readonly name = 'RemediationNotPossibleError';
  /** The instance the remediation was for. */
  readonly instanceId: string;

  /**
   * @param instanceId - the instance the remediation was for
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK error, if any
   */
  constructor(instanceId: string, message: string, options?: { cause?: unknown }) {
    super(`${instanceId}: ${message}`, options);
    this.instanceId = instanceId;
  }
}

/** SNS refused or could not take a message (alert or decision); the caller logs it and may retry. */
export class AlertPublishError extends Error {
  override readonly name = 'AlertPublishError';
  /** The topic ARN the message was for. */
  readonly topicArn: string;

  /**
   * @param topicArn - the topic the message was for
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK error
   */
  constructor(topicArn: string, message: string, options?: { cause?: unknown }) {
    super(`${topicArn}: ${message}`, options);
    this.topicArn = topicArn;
  }
}

/**
 * An AWS call of a remediation failed (throttling, permissions, ResourceContention after every
 * retry). Nothing was done or it is unknown whether it was; the handler escalates to a human.
 */
export class RemediationFailedError extends Error {
  override readonly name = 'RemediationFailedError';
  /** The instance the remediation was for. */
  readonly instanceId: string;
  /** The AWS call that failed, e.g. `SetInstanceHealth`. */
  readonly operation: string;

  /**
   * @param instanceId - the instance the remediation was for
   * @param operation - the AWS call that failed
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK error
   */
  constructor(instanceId: string, operation: string, message: string, options?: { cause?: unknown }) {
    super(`${operation} ${instanceId}: ${message}`, options);
    this.instanceId = instanceId;
    this.operation = operation;
  }
}
