import { RULE_IDS, type RuleId } from '../../lambdas/domain';
import { CELLS, type ScenarioVerdict } from './judge';

/**
 * The confusion matrix of a scenario run as text: one row per scenario, one numbered column per rule
 * that any scenario expected, allowed or raised (in `RULE_IDS` order; the numbers are named under
 * the matrix), the diagnosis expected and got, then every mismatch in words and a one-line total.
 *
 * @param verdicts - from `judgeScenario`, in run order
 * @returns the text, lines ending in `\n`
 */
export function formatConfusionMatrix(verdicts: readonly ScenarioVerdict[]): string {
  const used = new Set<RuleId>(verdicts.flatMap((v) => [...v.cells.keys()]));
  const rules = RULE_IDS.filter((r) => used.has(r));
  const nameWidth = Math.max(8, ...verdicts.map((v) => v.scenario.length)) + 1;
  const cell = (text: string): string => text.padStart(3);
  const lines: string[] = [];
  lines.push(
    `Legend: ${CELLS.hit} expected and raised  ${CELLS.miss} expected, not raised  ${CELLS.false_alarm} raised, not expected  ${CELLS.tolerated} allowed  ${CELLS.quiet} quiet`,
    '',
    `${'scenario'.padEnd(nameWidth)}${rules.map((_, i) => cell(String(i + 1))).join('')}  diagnosis`,
  );
  for (const v of verdicts) {
    const cells = rules.map((r) => cell(CELLS[v.cells.get(r) ?? 'quiet'])).join('');
    const got = v.diagnosis_got.join(',') || 'none';
    const diagnosis =
      v.diagnosis_expected === undefined
        ? `(${got})`
        : v.diagnosis_got.length === 1 && got === v.diagnosis_expected
          ? `${got} ${CELLS.hit}`
          : `${got} ${CELLS.miss} (expected ${v.diagnosis_expected})`;
    lines.push(`${v.scenario.padEnd(nameWidth)}${cells}  ${diagnosis}`);
  }
  lines.push('', 'Rules:');
  for (let i = 0; i < rules.length; i += 4)
    lines.push(
      `  ${rules
        .slice(i, i + 4)
        .map((r, j) => `${String(i + j + 1).padStart(2)} ${r}`.padEnd(26))
        .join('')
        .trimEnd()}`,
    );
  const wrong = verdicts.filter((v) => v.mismatches.length > 0);
  if (wrong.length > 0) {
    lines.push('', 'Mismatches:');
    for (const v of wrong) for (const m of v.mismatches) lines.push(`  ${v.scenario}: ${m}`);
  }
  lines.push(
    '',
    `${verdicts.length} scenarios: ${verdicts.length - wrong.length} judged right, ${wrong.length} wrong`,
  );
  return `${lines.join('\n')}\n`;
}
