import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

/** Repository root, from this file's place in `test/e2e/`. */
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** What a CLI run gave back. */
export interface CliRun {
  /** Exit code (0 on success). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `gpu-sentinel` as a user does (`node bin/gpu-sentinel.mjs …` from the repository root, logs at
 * `error`), and resolves with its exit code and output whether it succeeds or fails.
 *
 * @param args - the command and its options
 * @param env - extra environment @default none
 */
export function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return promisify(execFile)(process.execPath, [join(ROOT, 'bin/gpu-sentinel.mjs'), ...args], {
    cwd: ROOT,
    env: { ...process.env, GPU_SENTINEL_LOG_LEVEL: 'error', ...env },
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    (r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }),
    (e: { code: number; stdout: string; stderr: string }) => ({
      code: e.code,
      stdout: e.stdout,
      stderr: e.stderr,
    }),
  );
}
