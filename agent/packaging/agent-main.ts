import { Command, Option } from 'commander';
import { runAgentCommand } from '../../bin/commands/agent';
import { AGENT_VERSION } from '../../bin/commands/paths';
import {
  AGENT_CONFIG_FILE_ENV,
  AGENT_CONFIG_OPTIONS,
  type AgentConfigName,
  DEFAULT_AGENT_CONFIG_FILE,
  describeSource,
  loadAgentConfig,
  renderAgentConfigMarkdown,
} from '../config';

/**
 * Entry of the bundled host agent (`gpu-sentinel-agent.mjs`): only the `agent` command, with every
 * option of the config table as a flag, so the bundle carries no DuckDB nor CDK. Options resolve
 * flags > `GPU_SENTINEL_*` env > `/etc/gpu-sentinel/agent.json` > defaults; the run itself is
 * `runAgentCommand` of the CLI. `config` prints the resolved configuration and exits.
 */

/** Commander's attribute name of a long flag: `--flush-interval-s` → `flushIntervalS`. */
const attribute = (flag: string): string => new Option(`${flag} <value>`).attributeName();

/** Flag values by config name, from commander's parsed options. */
function flagValues(opts: Record<string, unknown>): Partial<Record<AgentConfigName, unknown>> {
  const out: Partial<Record<AgentConfigName, unknown>> = {};
  for (const o of AGENT_CONFIG_OPTIONS) out[o.name] = opts[attribute(o.flag)];
  return out;
}

/** Adds `--config` and one flag per option (no commander defaults: the config loader owns them). */
function withConfigFlags(command: Command): Command {
  command.option(
    '--config <file>',
    `agent config file, JSON (env ${AGENT_CONFIG_FILE_ENV}; default ${DEFAULT_AGENT_CONFIG_FILE} if present)`,
  );
  for (const o of AGENT_CONFIG_OPTIONS) {
    const def = o.defaultNote ?? (o.default === undefined ? 'none' : String(o.default));
    const unit = o.unit ? `, ${o.unit}` : '';
    command.option(`${o.flag} <value>`, `${o.description} (env ${o.env}${unit}; default ${def})`);
  }
  return command;
}

const program = new Command()
  .name('gpu-sentinel-agent')
  .description('gpu-sentinel host agent: NVML telemetry, SigV4-signed gzip batches to the gpu-sentinel API')
  .version(AGENT_VERSION);

withConfigFlags(
  program
    .command('agent')
    .description('Run the host agent: read NVML every poll interval, flush windows, send batches')
    .option('--once', 'take one short window and stop', false)
    .option('--print', 'print the batch as JSON (with --once)', false),
).action(async (opts: Record<string, unknown>) => {
  const { config } = loadAgentConfig({
    ...(typeof opts.config === 'string' ? { file: opts.config } : {}),
    env: process.env,
    flags: flagValues(opts),
  });
  process.exitCode = await runAgentCommand(
    config,
    { once: opts.once === true, print: opts.print === true },
    (s) => process.stdout.write(s),
  );
});

withConfigFlags(
  program
    .command('config')
    .description('Print the resolved agent configuration (JSON, with the source of each option) and exit')
    .option('--docs', 'print the options table as Markdown instead', false),
).action((opts: Record<string, unknown>) => {
  if (opts.docs === true) {
    process.stdout.write(renderAgentConfigMarkdown());
    return;
  }
  const loaded = loadAgentConfig({
    ...(typeof opts.config === 'string' ? { file: opts.config } : {}),
    env: process.env,
    flags: flagValues(opts),
  });
  const sources = Object.fromEntries(
    Object.entries(loaded.sources).map(([name, source]) => [name, describeSource(source)]),
  );
  process.stdout.write(
    `${JSON.stringify({ file: loaded.file ?? null, config: loaded.config, sources }, null, 2)}\n`,
  );
});

try {
  await program.parseAsync(process.argv);
} catch (err) {
  process.stderr.write(`gpu-sentinel-agent: ${(err as Error).message}\n`);
  process.exitCode = 2;
}
