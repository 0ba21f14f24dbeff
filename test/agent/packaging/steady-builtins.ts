import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Node built-ins the running agent (ESM bundle or single executable, signing and sending) must not
 * load, as `process.moduleLoadList` names them: each was loaded once by a library or by the agent's
 * own code for something the agent never does, and cost peak RSS on Node.js 24 (BENCHMARKS.md,
 * 2026-11-28 "the built-in modules the agent loads"):
 * - `fs/promises` and what Node.js 24 loads with it (`readline`, the REPL's history, `fs.watch`):
 *   the spool's files go through `agent/async-fs.ts`, the SDK's shared-config loader and koffi's
 *   loaders get it only when called;
 * - `assert` (sonic-boom's argument check, stubbed), `worker_threads` and `util.parseArgs`
 *   (reading every export of `node:util`: koffi's loaders, rewritten), `internal/navigator` (zod's
 *   schemas of the contract, built at every start of the single executable before its two-pass
 *   bundle dropped them).
 *
 * Not here: `perf_hooks`, which p-retry's `performance.now()` loads at each send: keeping it out
 * measured no change of peak RSS.
 */
export const STEADY_STATE_UNLOADED_BUILTINS = [
  'fs/promises',
  'internal/fs/promises',
  'internal/readline/interface',
  'internal/repl/history',
  'internal/fs/watchers',
  'assert',
  'worker_threads',
  'internal/util/parse_args/parse_args',
  'internal/navigator',
] as const;

/**
 * A `node -r` preload (or `NODE_OPTIONS=--require`) that writes `process.moduleLoadList` (every
 * Node built-in the process loaded) to `<dir>/module-load-list-<name>.txt` when the process exits.
 *
 * @param dir - a temporary folder of the test
 * @param name - tells the lists of one test file apart
 * @returns the list's path and the preload's
 */
export function moduleLoadListPreload(dir: string, name: string): { loaded: string; preload: string } {
  const loaded = join(dir, `module-load-list-${name}.txt`);
  const preload = join(dir, `module-load-list-${name}.cjs`);
  writeFileSync(
    preload,
    `process.on('exit', () => require('node:fs').writeFileSync(${JSON.stringify(loaded)}, process.moduleLoadList.join('\\n')));\n`,
  );
  return { loaded, preload };
}

/** Which of {@link STEADY_STATE_UNLOADED_BUILTINS} the list written by {@link moduleLoadListPreload} holds. */
export function unwantedBuiltins(moduleLoadList: string): string[] {
  const loaded = new Set(moduleLoadList.split('\n'));
  return STEADY_STATE_UNLOADED_BUILTINS.filter((name) => loaded.has(`NativeModule ${name}`));
}
