import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { registerAgentCommands } from '../agent/cli/agent-cli';
import { AGENT_VERSION } from '../agent/version';
import { REPORT_GROUPINGS, REPORT_PERIODS } from '../lambdas/domain';
import { COST_MODEL_FORMATS, runCostModelCommand } from './commands/cost-model';
import { runLocalCommand } from './commands/local';
import { cliLogger } from './commands/logger';
import { REPORT_FORMATS, runReportCommand } from './commands/report';
import { runScenariosCommand } from './commands/scenarios';
import { DEFAULT_COST_MODEL_INPUT } from './cost-model/pipeline-cost';

/** A commander parser of a number > 0 (an integer when `integer`), refusing anything else naming the option. */
function positiveNumber(name: string, integer = false): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0 || (integer && !Number.isSafeInteger(n)))
      throw new InvalidArgumentError(
        `Expected \`${name}\` to be ${integer ? 'an integer' : 'a number'} > 0, got \`${value}\``,
      );
    return n;
  };
}

/** A commander parser of an integer ≥ 0, refusing anything else naming the option. */
function countOf(name: string): (value: string) => number {
  return (value) => {
    const n = Number(value);
    if (!Number.isSafeInteger(n) || n < 0)
      throw new InvalidArgumentError(`Expected \`${name}\` to be an integer ≥ 0, got \`${value}\``);
    return n;
  };
}

/** Where one CLI run writes and what environment it reads: the process's own, or a test's. */
export interface CliIo {
  /** Results (text, JSON, CSV): stdout of the process. */
  readonly stdout: (s: string) => void;
  /** Errors and the structured log (JSON lines): stderr of the process. */
  readonly stderr: (s: string) => void;
  /** Environment: `GPU_SENTINEL_LOG_LEVEL` and the agent's `GPU_SENTINEL_*` options. */
  readonly env: NodeJS.ProcessEnv;
}

/**
 * The gpu-sentinel CLI: `local` (the whole pipeline on this machine), `scenarios` (the labelled
 * scenario suite and its confusion matrix), `agent` (the host agent), `doctor` (checks a host for it) and `agent-config` (its
 * resolved configuration), `report` (finance report), `cost-model` (the stack's AWS cost). The
 * executable (`bin/gpu-sentinel.mjs`) runs it on the process's streams; tests run it in-process.
 * Never exits the process: commander's own exits (usage errors, `--help`, `--version`) come back as
 * codes.
 *
 * @param args - the arguments after the executable, e.g. `['report', '--db', 'x.duckdb']`
 * @param io - where output goes and which environment is read
 * @returns the exit code: 0 on success, the command's code (1 for a failed run), 1 for a usage error
 *   commander refused, 2 for an error a command threw (its message on stderr as `gpu-sentinel: …`)
 */
export async function runCli(args: readonly string[], io: CliIo): Promise<number> {
  let exitCode = 0;
  const write = io.stdout;
  const log = cliLogger(io.env.GPU_SENTINEL_LOG_LEVEL, io.stderr);
  const program = new Command()
    .name('gpu-sentinel')
    .description('GPU efficiency, waste-cost and hardware-health monitoring for AWS GPU fleets')
    .version(AGENT_VERSION);

  program
    .command('local')
    .description(
      'Run the whole pipeline on this machine: loopback API, DuckDB store, console alerts, dry-run remediation; fed by the real NVML if present, else by a replay of real captures, plus a small simulated fleet (one host per diagnosis, tagged simulated=true)',
    )
    .option(
      '--replay <manifest>',
      'replay manifest (JSON) of recorded captures; default: the bundled real captures',
    )
    .option('--out <dir>', 'output folder for alerts.jsonl, remediation.jsonl, waste.csv', 'out')
    .option('--db <file>', 'DuckDB file to keep (default: <out>/gpu-sentinel.duckdb, recreated each run)')
    .option(
      '--duration-s <seconds>',
      'with a real GPU: how long the live agent runs, s',
      positiveNumber('--duration-s'),
      60,
    )
    .option(
      '--nvml-lib <path>',
      'NVML library to load (env GPU_SENTINEL_NVML_LIB; default libnvidia-ml.so.1)',
    )
    .option('--no-nvml', 'never load NVML; replay the captures')
    .addOption(
      new Option(
        '--only <source>',
        'feed only one source: live (the real NVML), captures (the replay) or simulation (the simulated fleet)',
      ).choices(['live', 'captures', 'simulation']),
    )
    .option('--rules <file>', 'rule-threshold overrides: a JSON object of threshold name → number')
    .addOption(
      new Option('--remediation-mode <mode>', 'remediation mode (local mode is always dry-run)')
        .choices(['off', 'notify', 'replace'])
        .default('replace'),
    )
    .option(
      '--remediation-delay-s <seconds>',
      'grace period: announce a reboot or replacement this long before it is (dry-run) carried out, s (default 0: at once)',
    )
    .option('--price-overrides <json>', 'prices by instance type, USD/hour, e.g. {"p5.48xlarge":40}')
    .option(
      '--price-rates <file>',
      'JSON rates in the shape of the stack priceRates prop: {"savings_plans":{"p5.48xlarge":34.68},"spot":{…},"spot_discount":0.6}',
    )
    .option(
      '--instance-type <type>',
      'with a real GPU: the EC2 instance type to price the run at (default local.gpu, unpriced)',
    )
    .option(
      '--cur <path>',
      'AWS Cost and Usage Report 2.0 (Parquet or CSV, gzip ok; a file or folder): the fleet evaluator prices team waste at each instance’s newest billed rate',
    )
    .option(
      '--fleet-interval-s <seconds>',
      'how often the fleet evaluator (agent_silent, straggler per job, waste_rate per team) runs during the run, s; it runs once more at the end',
      positiveNumber('--fleet-interval-s'),
      60,
    )
    .action(async (opts) => {
      exitCode = await runLocalCommand(opts, log, write);
    });

  program
    .command('scenarios')
    .description(
      'Run the labelled scenario suite (simulated hosts per diagnosis, real kernel-log captures) through the local pipeline and print the confusion matrix; exits 1 on any mismatch',
    )
    .option(
      '--out <dir>',
      'keep alerts.jsonl, remediation.jsonl and the DuckDB file here (default: a temp folder)',
    )
    .option('--rules <file>', 'rule-threshold overrides: a JSON object of threshold name → number')
    .option(
      '--duration-s <seconds>',
      'simulated span of each scenario, s (60..21600)',
      positiveNumber('--duration-s', true),
    )
    .option('--seed <n>', 'seed of the simulation', positiveNumber('--seed', true))
    .option('--only <names>', 'comma-separated scenario names', (v: string) => v.split(',').filter(Boolean))
    .action(async (opts) => {
      exitCode = await runScenariosCommand(opts, log, write);
    });

  registerAgentCommands(program, 'agent-config', write, {
    env: io.env,
    setExitCode: (code) => {
      exitCode = code;
    },
  });

  program
    .command('report')
    .description(
      'Finance report from a local DuckDB store: GPU-hours, cost and wasted USD by class and diagnosis, grouped, with the method and prices used',
    )
    .requiredOption('--db <file>', 'DuckDB file written by `gpu-sentinel local --db` (must exist)')
    .addOption(new Option('--by <grouping>', 'group by').choices([...REPORT_GROUPINGS]).default('team'))
    .addOption(
      new Option(
        '--period <period>',
        'the last whole calendar day, ISO week or month before --to (default: day)',
      )
        .choices([...REPORT_PERIODS])
        .conflicts('from'),
    )
    .option('--from <iso>', 'inclusive start, ISO 8601 (instead of --period)')
    .option('--to <iso>', 'exclusive end, ISO 8601 (default: now)')
    .option(
      '--cur <path>',
      'AWS Cost and Usage Report 2.0 (Parquet or CSV, gzip ok; a file or folder): price each instance-hour at its effective cost',
    )
    .option(
      '--tz <zone>',
      'IANA time zone of the calendar periods and days, e.g. Europe/Berlin (default: UTC)',
    )
    .addOption(new Option('--format <format>', 'output').choices([...REPORT_FORMATS]).default('text'))
    .option('--out <file>', 'write to this file instead of stdout')
    .action(async (opts) => {
      exitCode = await runReportCommand(opts, write);
    });

  program
    .command('cost-model')
    .description(
      'AWS cost per GPU-month of the deployed pipeline (API Gateway, Lambda, DynamoDB, the store, SNS, CloudWatch), item by item with prices and sources',
    )
    .addOption(new Option('--store <store>', 'telemetry store').choices(['athena', 'timestream']))
    .addOption(new Option('--api <api>', 'API type (the stack deploys rest)').choices(['rest', 'http']))
    .option(
      '--gpus-per-instance <n>',
      'GPUs per instance (default 8)',
      positiveNumber('--gpus-per-instance', true),
    )
    .option('--window-s <s>', 'flush window, seconds (default 10)', positiveNumber('--window-s'))
    .option(
      '--windows-per-batch <n>',
      'flush windows per batch (default 6)',
      positiveNumber('--windows-per-batch', true),
    )
    .option(
      '--efa-devices-per-instance <n>',
      `EFA devices per instance: 32 on p5/p5e, 16 on p5en, 4 on p4d, 0 without EFA (default ${DEFAULT_COST_MODEL_INPUT.efaDevicesPerInstance})`,
      countOf('--efa-devices-per-instance'),
    )
    .option(
      '--retention-months <n>',
      'months of data kept (default 12)',
      positiveNumber('--retention-months'),
    )
    .option(
      '--fleet-gpus <n>',
      'GPUs sharing the fixed costs (default 512)',
      positiveNumber('--fleet-gpus', true),
    )
    .option(
      '--custom-metrics <n>',
      `custom metric series of the deployment (default ${DEFAULT_COST_MODEL_INPUT.customMetrics})`,
      positiveNumber('--custom-metrics', true),
    )
    .option(
      '--lambda-cpu-ms-per-batch <ms>',
      'ingest CPU per batch, ms (default: measured)',
      positiveNumber('--lambda-cpu-ms-per-batch'),
    )
    .addOption(new Option('--format <format>', 'output').choices([...COST_MODEL_FORMATS]).default('text'))
    .action((opts) => {
      exitCode = runCostModelCommand(opts, write);
    });

  program.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  for (const command of program.commands) {
    command.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
  }
  try {
    await program.parseAsync([...args], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode;
    io.stderr(`gpu-sentinel: ${(err as Error).message}\n`);
    return 2;
  }
  return exitCode;
}
