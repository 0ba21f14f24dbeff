import { readFileSync } from 'node:fs';
import { Command } from 'commander';
import { registerAgentCommands } from '../cli/agent-cli';
import { AGENT_VERSION } from '../version';

/**
 * The bundled host agent's command line, shared by its two entries: `agent-main.ts` (the ESM
 * bundle a host's Node.js runs) and `agent-sea-main.ts` (the single executable, which needs no
 * Node.js). Only the `agent` command, with every option of the config table as a flag, so the
 * bundle carries no DuckDB nor CDK; `config` prints the resolved configuration and exits.
 * Options resolve flags > `GPU_SENTINEL_*` env > `/etc/gpu-sentinel/agent.json` > defaults.
 *
 * For install.sh, hidden: `set-endpoint FILE URL` prints the JSON object of FILE with its
 * `endpoint` set to URL, every other key kept; `get-endpoint FILE` prints its `endpoint`. A host
 * with the single executable and no Node.js has no other JSON tool.
 *
 * @param argv - `process.argv` (the first two entries are the runtime and the script, as Node gives them)
 * @returns when the command finished; never rejects: a failure is printed and sets `process.exitCode` (2; 1 for set-endpoint)
 */
export async function runAgentProgram(argv: readonly string[]): Promise<void> {
  const program = new Command()
    .name('gpu-sentinel-agent')
    .description('gpu-sentinel host agent: NVML telemetry, SigV4-signed gzip batches to the gpu-sentinel API')
    .version(AGENT_VERSION);

  registerAgentCommands(program, 'config', (s) => process.stdout.write(s));
  program
    .command('set-endpoint <file> <url>', { hidden: true })
    .description('Print the JSON config FILE with "endpoint" set to URL (install.sh)')
    .action((file: string, url: string) => {
      process.stdout.write(`${JSON.stringify({ ...readConfigObject(file), endpoint: url }, null, 2)}\n`);
    });
  program
    .command('get-endpoint <file>', { hidden: true })
    .description('Print the "endpoint" string of the JSON config FILE, or nothing (install.sh)')
    .action((file: string) => {
      const endpoint = readConfigObject(file).endpoint;
      if (typeof endpoint === 'string') process.stdout.write(endpoint);
    });

  try {
    await program.parseAsync([...argv]);
  } catch (err) {
    process.stderr.write(`gpu-sentinel-agent: ${(err as Error).message}\n`);
    process.exitCode = err instanceof ConfigFileError ? 1 : 2;
  }
}

/** A config file that is not a JSON object. */
class ConfigFileError extends Error {
  override readonly name = 'ConfigFileError';
}

/**
 * The JSON object `file` holds.
 * @throws {ConfigFileError} when `file` cannot be read or does not hold a JSON object
 */
function readConfigObject(file: string): Record<string, unknown> {
  let config: unknown;
  try {
    config = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new ConfigFileError(`Expected ${file} to hold a JSON object, got: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config))
    throw new ConfigFileError(
      `Expected ${file} to hold a JSON object, got ${Array.isArray(config) ? 'an array' : String(config)}`,
    );
  return config as Record<string, unknown>;
}
