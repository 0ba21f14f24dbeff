/**
 * The errors the ports declare (`ports.ts`): what a caller of a port may catch and match with
 * `instanceof`, whichever adapter is deployed. Each carries `name`, `cause` and typed data; its
 * message says what was expected, what came, and what to do.
 */

/** Brands of a port error, under a global-registry symbol so every bundled copy of a class reads them. */
const BRANDS = Symbol.for('gpu-sentinel.port-error-brands');

/**
 * Base class of the port errors. `instanceof` on a subclass matches by the subclass's `brand`, not
 * by object identity, so an error thrown by a second copy of the class still matches the class
 * the caller imported: the ingest Lambda ships the EC2 side (`make-instance-apis.js`, which throws
 * {@link InstanceLookupError}) as a bundle file of its own, with its own copy of this module.
 */
export class PortError extends Error {
  /** The class's brand, unique per subclass; a subclass without its own matches by identity only. */
  static readonly brand: string = 'gpu-sentinel/PortError';

  /**
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK or driver error
   */
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    const brands: string[] = [];
    for (let c: unknown = new.target; typeof c === 'function' && c !== Error; c = Object.getPrototypeOf(c)) {
      if (Object.hasOwn(c, 'brand')) brands.push((c as unknown as typeof PortError).brand);
    }
    Object.defineProperty(this, BRANDS, { value: Object.freeze(brands) });
  }

  /**
   * True when `value` was made by this class or a subclass, in any bundled copy of it.
   * @param value - anything
   */
  static override [Symbol.hasInstance](value: unknown): boolean {
    // biome-ignore lint/complexity/noThisInStatic: `x instanceof C` asks C itself, which may be any subclass
    return hasBrandOf(this, value);
  }
}

/** True when `value` carries the brand of `asked` (identity only for a class without a brand of its own). */
function hasBrandOf(asked: typeof PortError, value: unknown): boolean {
  if (!Object.hasOwn(asked, 'brand')) return Function.prototype[Symbol.hasInstance].call(asked, value);
  const brands = (value as { readonly [BRANDS]?: readonly string[] } | null | undefined)?.[BRANDS];
  return brands?.includes(asked.brand) ?? false;
}

/**
 * The store could not be reached or refused the whole request (throttling, 5xx, network, a DuckDB
 * failure): the `TelemetryStore` and `StateStore` ports' failure. The ingest handler answers 503
 * and the agent retries the batch later; nothing is lost.
 */
export class StoreUnavailableError extends PortError {
  static override readonly brand: string = 'gpu-sentinel/StoreUnavailableError';
  override readonly name = 'StoreUnavailableError';
  /** The store operation that failed, e.g. `WriteRecords gpu_windows`. */
  readonly operation: string;

  /**
   * @param operation - the store operation that failed
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK or driver error
   */
  constructor(operation: string, message: string, options?: { cause?: unknown }) {
    super(`${operation}: ${message}`, options);
    this.operation = operation;
  }
}

/** A store query the adapter cannot answer (bad range, unexpected result shape): the caller's mistake or a bug, not an outage. */
export class StoreQueryError extends PortError {
  static override readonly brand: string = 'gpu-sentinel/StoreQueryError';
  override readonly name = 'StoreQueryError';
}

/**
 * EC2 or Auto Scaling could not be asked about an instance (throttled, no permission, unreachable):
 * the `InstanceDirectory` port's failure. The ingest handler answers 503 and the agent retries; an
 * instance EC2 does not know is not an error (the port answers `undefined`).
 */
export class InstanceLookupError extends PortError {
  static override readonly brand: string = 'gpu-sentinel/InstanceLookupError';
  override readonly name = 'InstanceLookupError';
  /** The instance asked about. */
  readonly instanceId: string;
  /** The region asked in. */
  readonly region: string;

  /**
   * @param instanceId - the instance asked about
   * @param region - the region asked in
   * @param message - what was expected, what came, what to do
   * @param options - `cause`: the SDK error
   */
  constructor(instanceId: string, region: string, message: string, options?: { cause?: unknown }) {
    super(`${instanceId} in ${region}: ${message}`, options);
    this.instanceId = instanceId;
    this.region = region;
  }
}
