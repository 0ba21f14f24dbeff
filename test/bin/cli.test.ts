import { describe, expect, it } from 'vitest';
import { AGENT_VERSION } from '../../agent/version';
import { DEFAULT_COST_MODEL_INPUT } from '../../bin/cost-model/pipeline-cost';
import { runCli } from '../e2e/run-cli';

describe('runCli: the CLI in-process, as the executable runs it', () => {
  it('answers --version on stdout with exit code 0, leaving the process exit code alone', async () => {
    // Act
    const run = await runCli(['--version']);

    // Assess
    expect(run).toMatchObject({ code: 0, stdout: `${AGENT_VERSION}\n` });
    expect(process.exitCode).toBeUndefined();
  });

  it('returns 1 naming the option for a usage error commander refuses, instead of exiting the process', async () => {
    // Act
    const run = await runCli(['report', '--format', 'pdf', '--db', 'x.duckdb']);

    // Assess
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/option '--format <format>' argument 'pdf' is invalid/);
  });

  it('returns 2 with the message on stderr when a command throws', async () => {
    // Act
    const run = await runCli(['report', '--db', '/nonexistent/gpu-sentinel.duckdb']);

    // Assess
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/^gpu-sentinel: Expected --db .*does not exist/);
  });

  it('gives the cost model’s own default series count in the --custom-metrics help', async () => {
    // Act
    const run = await runCli(['cost-model', '--help']);

    // Assess
    expect(run.code).toBe(0);
    expect(run.stdout.replace(/\s+/g, ' ')).toContain(
      `custom metric series of the deployment (default ${DEFAULT_COST_MODEL_INPUT.customMetrics})`,
    );
    expect(DEFAULT_COST_MODEL_INPUT.customMetrics).toBe(23);
  });

  it('refuses a negative --efa-devices-per-instance naming the option', async () => {
    // Act
    const run = await runCli(['cost-model', '--efa-devices-per-instance', '-1']);

    // Assess
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('Expected `--efa-devices-per-instance` to be an integer ≥ 0, got `-1`');
  });
});
