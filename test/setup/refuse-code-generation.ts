import { vi } from 'vitest';

/**
 * Makes `new Function(…)` throw as it does under Node's `--disallow-code-generation-from-strings`
 * (an `EvalError`), by stubbing the global `Function` with `vi.stubGlobal`; the caller undoes it with
 * `vi.unstubAllGlobals()` and re-imports the module under test (`vi.resetModules()`) so its
 * load-time compilation meets the refusal.
 * @returns a live count of the refused constructions (read `.refused` after the import)
 */
export function refuseCodeGeneration(): { readonly refused: number } {
  const counter = { refused: 0 };
  vi.stubGlobal(
    'Function',
    new Proxy(Function, {
      construct: () => {
        counter.refused++;
        throw new EvalError('Code generation from strings disallowed for this context');
      },
    }),
  );
  return counter;
}
