import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { AGENT_VERSION } from '../../agent/version';
import type { Log } from '../../lambdas/handlers/log';
import { defaultScenarios } from '../scenarios/catalog';
import { formatConfusionMatrix } from '../scenarios/confusion-matrix';
import { runScenarios } from '../scenarios/run-scenarios';
import { loadRuleContext } from './rules-file';

/** Options of `gpu-sentinel scenarios`, as commander parses them. */
export interface ScenariosCommandOptions {
  /** Output folder to keep (alerts.jsonl, remediation.jsonl, the DuckDB file). @default a temp folder, removed */
  readonly out?: string;
  /** Rule-threshold overrides (JSON file). @default the defaults */
  readonly rules?: string;
  /** Simulated span, s. @default 1200 */
  readonly durationS?: number;
  /** Seed of the simulation. @default 1 */
  readonly seed?: number;
  /** Only these scenarios (names), when given. */
  readonly only?: readonly string[];
}

/**
 * `gpu-sentinel scenarios`: runs the labelled scenario suite through the real local pipeline and
 * prints the confusion matrix (scenario × rule, and the diagnosis).
 *
 * @returns the process exit code: 0 when every scenario was judged right, 1 otherwise
 * @throws {RangeError} when `--only` names no known scenario
 * @throws {RuleThresholdsError} when the rules file is bad
 */
export async function runScenariosCommand(
  opts: ScenariosCommandOptions,
  log: Log,
  write: (s: string) => void,
): Promise<number> {
  const rules = await loadRuleContext(opts.rules);
  const all = defaultScenarios();
  const scenarios = opts.only ? all.filter((s) => opts.only?.includes(s.name)) : all;
  const unknown = (opts.only ?? []).filter((n) => !all.some((s) => s.name === n));
  if (unknown.length > 0 || scenarios.length === 0)
    throw new RangeError(
      `Expected scenario names from ${all.map((s) => s.name).join(', ')}, got \`${unknown.join(',') || '(none)'}\``,
    );
  const outDir = opts.out ? resolve(opts.out) : await mkdtemp(join(tmpdir(), 'gpu-sentinel-scenarios-'));
  try {
    write(
      `Running ${scenarios.length} labelled scenarios through the local pipeline (loopback HTTP → ingest → DuckDB)\n\n`,
    );
    const verdicts = await runScenarios(scenarios, {
      outDir,
      rules,
      log,
      agentVersion: AGENT_VERSION,
      ...(opts.durationS === undefined ? {} : { durationS: opts.durationS }),
      ...(opts.seed === undefined ? {} : { seed: opts.seed }),
    });
    write(formatConfusionMatrix(verdicts));
    return verdicts.every((v) => v.mismatches.length === 0) ? 0 : 1;
  } finally {
    if (!opts.out) await rm(outDir, { recursive: true, force: true });
  }
}
