import { Command } from 'commander';
import { registerAgentCommands } from '../cli/agent-cli';
import { AGENT_VERSION } from '../version';

/**
 * Entry of the bundled host agent (`gpu-sentinel-agent.mjs`): only the `agent` command, with every
 * option of the config table as a flag, so the bundle carries no DuckDB nor CDK. Options resolve
 * flags > `GPU_SENTINEL_*` env > `/etc/gpu-sentinel/agent.json` > defaults; the run itself is
 * `runAgentCommand` of the CLI. `config` prints the resolved configuration and exits.
 */

const program = new Command()
  .name('gpu-sentinel-agent')
  .description('gpu-sentinel host agent: NVML telemetry, SigV4-signed gzip batches to the gpu-sentinel API')
  .version(AGENT_VERSION);

registerAgentCommands(program, 'config', (s) => process.stdout.write(s));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`gpu-sentinel-agent: ${(err as Error).message}\n`);
  process.exitCode = 2;
}
