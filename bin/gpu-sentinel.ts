import { runCli } from './cli';

/**
 * The `gpu-sentinel` executable (launched by `bin/gpu-sentinel.mjs`): runs the CLI of `bin/cli.ts` on
 * this process's arguments, streams and environment, and leaves its exit code on the process.
 */
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
  env: process.env,
});
