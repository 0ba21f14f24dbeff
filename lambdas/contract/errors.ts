/**
 * A batch that breaks the wire contract. `path` names the first bad field in JS notation
 * (`windows[3].metrics.sm_active`, or `(root)`), `message` says what was expected and what came.
 * The API answers it with 400 and stores nothing of the batch.
 */
export class ContractValidationError extends Error {
  override readonly name = 'ContractValidationError';
  /** The first bad field, e.g. `windows[0].metrics.gpu_util`; `(root)` for the body itself. */
  readonly path: string;

  /**
   * @param path - the first bad field, JS notation
   * @param message - what was expected and what came
   * @param options - `cause`, the underlying validator error
   */
  constructor(path: string, message: string, options?: { cause?: unknown }) {
    super(`${path}: ${message}`, options);
    this.path = path;
  }
}

/**
 * Formats a validator issue path (`['windows', 3, 'metrics', 'sm_active']`) as
 * `windows[3].metrics.sm_active`; an empty path is `(root)`.
 */
export function formatPath(path: ReadonlyArray<PropertyKey>): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else out += out === '' ? String(part) : `.${String(part)}`;
  }
  return out === '' ? '(root)' : out;
}
