import { RULE_IDS, type RuleId } from '../../lambdas/domain';
import { CELLS, type ScenarioVerdict } from './judge';

/**
 * The confusion matrix of a scenario run as text: one row per scenario, one column per rule that
 * any scenario expected, allowed or raised (in `RULE_IDS` order, names written top-down), the
 * diagnosis expected and got, then every mismatch in words and a one-line total.
 *
 * @param verdicts - from `judgeScenario`, in run order
 * @returns the text, lines ending in `\n`
 */
export function formatConfusionMatrix(verdicts: readonly ScenarioVerdict[]): string {
  const used = new Set<RuleId>(verdicts.flatMap((v) => [...v.cells.keys()]));
  const rules = RULE_IDS.filter((r) => used.has(r));
  const nameWidth = Math.max(8, ...verdicts.map((v) => v.scenario.length)) + 2;
  const tall = Math.max(0, ...rules.map((r) => r.length));
  const lines: string[] = [];
  lines.push(
    `Legend: ${CELLS.hit} expected and raised  ${CELLS.miss} expected, not raised  ${CELLS.false_alarm} raised, not expected  ${CELLS.tolerated} allowed  ${CELLS.quiet} quiet`,
    '',
  );
  for (let row = 0; row < tall; row++) {
    const letters = rules.map((r) => r.padStart(tall)[row] ?? ' ').join(' ');
    lines.push(`${' '.repeat(nameWidth)}${letters}`.trimEnd());
  }
  lines.push(`${'scenario'.padEnd(nameWidth)}${'─'.repeat(Math.max(0, rules.length * 2 - 1))}  diagnosis`);
  for (const v of verdicts) {
    const cells = rules.map((r) => CELLS[v.cells.get(r) ?? 'quiet']).join(' ');
    const got = v.diagnosis_got.join(',') || 'none';
    const diagnosis =
      v.diagnosis_expected === undefined
        ? `(${got})`
        : v.diagnosis_got.length === 1 && got === v.diagnosis_expected
          ? `${got} ${CELLS.hit}`
          : `${got} ${CELLS.miss} (expected ${v.diagnosis_expected})`;
    lines.push(`${v.scenario.padEnd(nameWidth)}${cells}  ${diagnosis}`);
  }
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
