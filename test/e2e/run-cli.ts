import { runCli as runCliInProcess } from '../../bin/cli';

/** What a CLI run gave back. */
export interface CliRun {
  /** Exit code (0 on success). */
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs `gpu-sentinel` in this process, as `bin/gpu-sentinel.mjs` runs it (the same `runCli` of
 * `bin/cli.ts`, the same parser and commands, logs at `error`), collecting its output; the process
 * boundary itself is tested once, by `test/e2e/local-replay.test.ts`, which spawns the executable.
 *
 * @param args - the command and its options
 * @param env - extra environment @default none
 */
export async function runCli(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const code = await runCliInProcess(args, {
    stdout: (s) => {
      stdout += s;
    },
    stderr: (s) => {
      stderr += s;
    },
    env: { ...process.env, GPU_SENTINEL_LOG_LEVEL: 'error', ...env },
  });
  return { code, stdout, stderr };
}
