/**
 * Errors of the domain room. Each carries `name`, `cause` and typed data, and its message says what
 * was expected, what came, and what to do.
 */

/** Base class of every error thrown by `lambdas/domain`. */
export class DomainError extends Error {
  override readonly name: string = 'DomainError';
}

/**
 * A deployment override document (stack prop / env JSON / `--rules FILE`) with a wrong entry. `key`
 * names the bad entry (`(root)` when the document itself is wrong), `value` is what came.
 */
export class OverrideDocumentError extends DomainError {
  override readonly name: string = 'OverrideDocumentError';
  /** The offending key, or `(root)`. */
  readonly key: string;
  /** The offending value, as it came. */
  readonly value: unknown;

  /**
   * @param key - the bad key, or `(root)`
   * @param value - what came
   * @param message - what was expected and what to do
   * @param options - `cause`, e.g. the JSON SyntaxError
   */
  constructor(key: string, value: unknown, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.key = key;
    this.value = value;
  }
}

/** A price-override document that is not `{ "<instance type>": <USD/hour> }`; `key` is the instance type. */
export class PriceOverridesError extends OverrideDocumentError {
  override readonly name = 'PriceOverridesError';
}

/** A ledger input that cannot be priced: a window whose end is not after its start, or a bad price. */
export class LedgerInputError extends DomainError {
  override readonly name = 'LedgerInputError';
  /** The field that was wrong, e.g. `window.end` or `price.price_usd_per_hour`. */
  readonly field: string;
  /** What came. */
  readonly value: unknown;

  /**
   * @param field - the bad field
   * @param value - what came
   * @param message - what was expected
   */
  constructor(field: string, value: unknown, message: string) {
    super(message);
    this.field = field;
    this.value = value;
  }
}

/** An XID policy override that would make the policy unusable (bad action, count, window…). */
export class XidPolicyError extends DomainError {
  override readonly name = 'XidPolicyError';
  /** The XID code whose entry is wrong. */
  readonly xid: number;
  /** The entry field that is wrong. */
  readonly field: string;
  /** What came. */
  readonly value: unknown;

  /**
   * @param xid - the XID code
   * @param field - the bad field of its entry
   * @param value - what came
   * @param message - what was expected
   */
  constructor(xid: number, field: string, value: unknown, message: string) {
    super(message);
    this.xid = xid;
    this.field = field;
    this.value = value;
  }
}

/** A remediation mode string (stack prop / env) that is not one of `off`, `notify`, `replace`. */
export class RemediationModeError extends DomainError {
  override readonly name = 'RemediationModeError';
  /** What came. */
  readonly value: unknown;

  /**
   * @param value - what came
   * @param message - what was expected and what to do
   */
  constructor(value: unknown, message: string) {
    super(message);
    this.value = value;
  }
}

/**
 * A list of metric teams (stack prop `metricsTeams` / env `METRICS_TEAMS`) that would not keep the
 * `Team` dimension bounded: too many teams, a name CloudWatch or a reader would trip on, or a
 * reserved value.
 */
export class MetricsTeamsError extends DomainError {
  override readonly name = 'MetricsTeamsError';
  /** What came. */
  readonly value: unknown;

  /**
   * @param value - what came
   * @param message - what was expected and what to do
   */
  constructor(value: unknown, message: string) {
    super(message);
    this.value = value;
  }
}

/**
 * A rule-threshold override document (`RULE_THRESHOLDS` env JSON, `--rules FILE`) that is not
 * `{ "<threshold name>": <number in range> }`; `key` is the threshold name.
 */
export class RuleThresholdsError extends OverrideDocumentError {
  override readonly name = 'RuleThresholdsError';
}
