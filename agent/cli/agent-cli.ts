import { type Command, Option } from 'commander';
import {
  AGENT_CONFIG_FILE_ENV,
  AGENT_CONFIG_OPTIONS,
  type AgentConfigName,
  DEFAULT_AGENT_CONFIG_FILE,
  describeSource,
  loadAgentConfig,
  renderAgentConfigMarkdown,
} from '../config';
import { runAgentCommand } from './agent-command';

/**
 * The host agent's commands, shared by the full CLI (`gpu-sentinel agent`, `gpu-sentinel agent-config`)
 * and the bundled agent (`gpu-sentinel-agent agent`, `gpu-sentinel-agent config`): one flag per
 * option of the config table; options resolve flags > `GPU_SENTINEL_*` env > config file > defaults.
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

/** What the agent's commands read and where their exit code goes, when not the process's own. */
export interface AgentCommandsIo {
  /** Environment the options resolve from (`GPU_SENTINEL_*`). @default process.env */
  readonly env?: NodeJS.ProcessEnv;
  /** Receives the exit code of `agent` and `doctor`. @default sets `process.exitCode` */
  readonly setExitCode?: (code: number) => void;
}

/**
 * Registers `agent`, `doctor` and the config-printing command on `program`.
 * @param program - the commander program
 * @param configCommand - name of the command that prints the resolved configuration
 * @param write - stdout writer
 * @param io - environment and exit-code sink @default the process's
 */
export function registerAgentCommands(
  program: Command,
  configCommand: string,
  write: (s: string) => void,
  io: AgentCommandsIo = {},
): void {
  const env = io.env ?? process.env;
  const setExitCode =
    io.setExitCode ??
    ((code: number) => {
      process.exitCode = code;
    });
  withConfigFlags(
    program
      .command('agent')
      .description('Run the host agent: read NVML every poll interval, flush windows, send batches')
      .option('--once', 'take one short window and stop', false)
      .option('--print', 'print the batch as JSON (with --once)', false),
  ).action(async (opts: Record<string, unknown>) => {
    const { config } = loadAgentConfig({
      ...(typeof opts.config === 'string' ? { file: opts.config } : {}),
      env,
      flags: flagValues(opts),
    });
    setExitCode(
      await runAgentCommand(config, { once: opts.once === true, print: opts.print === true }, write),
    );
  });

  withConfigFlags(
    program
      .command('doctor')
      .description(
        "Check this host for the agent, each check with ✓/✗ and the fix: NVML, profiling (GPM or dcgm-exporter), /dev/kmsg, EFA sysfs, IMDSv2, the credentials' role, the endpoint and a signed probe that stores nothing; exits 1 when a check fails",
      )
      .option(
        '--checks <ids>',
        'report only these checks, comma-separated: nvml, profiling, kmsg, efa, imds, credentials, endpoint, probe (e.g. nvml,profiling,kmsg,efa in an AMI build)',
      ),
  ).action(async (opts: Record<string, unknown>) => {
    const { config } = loadAgentConfig({
      ...(typeof opts.config === 'string' ? { file: opts.config } : {}),
      env,
      flags: flagValues(opts),
    });
    // Loaded only for this command: the running agent never parses the doctor's checks.
    const [{ runDoctorCommand }, { parseDoctorChecks }] = await Promise.all([
      import('./doctor-command'),
      import('../doctor/run-doctor'),
    ]);
    const only = typeof opts.checks === 'string' ? parseDoctorChecks(opts.checks) : undefined;
    setExitCode(await runDoctorCommand(config, write, only));
  });

  withConfigFlags(
    program
      .command(configCommand)
      .description('Print the resolved agent configuration (JSON, with the source of each option) and exit')
      .option('--docs', 'print the options table as Markdown instead', false),
  ).action((opts: Record<string, unknown>) => {
    if (opts.docs === true) {
      write(renderAgentConfigMarkdown());
      return;
    }
    const loaded = loadAgentConfig({
      ...(typeof opts.config === 'string' ? { file: opts.config } : {}),
      env,
      flags: flagValues(opts),
    });
    const sources = Object.fromEntries(
      Object.entries(loaded.sources).map(([name, source]) => [name, describeSource(source)]),
    );
    write(`${JSON.stringify({ file: loaded.file ?? null, config: loaded.config, sources }, null, 2)}\n`);
  });
}
