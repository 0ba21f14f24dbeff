import { describe, expect, it } from 'vitest';
import { formatConfusionMatrix } from '../../../bin/scenarios/confusion-matrix';
import { type Cell, judgeScenario, type ScenarioObservation } from '../../../bin/scenarios/judge';
import type { Scenario } from '../../../bin/scenarios/scenario';
import type { Diagnosis, RuleId } from '../../../lambdas/domain';

function scenario(labels: Partial<Scenario> = {}): Scenario {
  return {
    name: 'fake-load',
    label: 'a tiny kernel',
    instance_id: 'i-05e00000000000001',
    expect: ['fake_load'],
    allow: ['waste_rate'],
    diagnosis: 'fake_load',
    play: async () => {},
    ...labels,
  };
}

function observed(o: {
  fired?: RuleId[];
  diagnoses?: (Diagnosis | undefined)[];
  decided?: RuleId[];
  refused?: number;
}): ScenarioObservation {
  return {
    fired: new Set(o.fired ?? []),
    diagnoses: new Map((o.diagnoses ?? ['fake_load']).map((d, i) => [String(i), d])),
    decided: o.decided ?? [],
    refused: o.refused ?? 0,
  };
}

describe('judgeScenario', () => {
  it.each<[string, RuleId[], Partial<Record<RuleId, Cell>>, string[]]>([
    ['the expected rule raised', ['fake_load'], { fake_load: 'hit', waste_rate: 'quiet' }, []],
    [
      'an allowed rule raised too',
      ['fake_load', 'waste_rate'],
      { fake_load: 'hit', waste_rate: 'tolerated' },
      [],
    ],
    ['the expected rule missing', [], { fake_load: 'miss' }, ['expected fake_load, not raised']],
    [
      'a rule neither expected nor allowed',
      ['fake_load', 'tensor_idle'],
      { tensor_idle: 'false_alarm' },
      ['raised tensor_idle, not expected'],
    ],
  ])('judges %s', (_case, fired, cells, mismatches) => {
    // Act
    const verdict = judgeScenario(scenario(), observed({ fired }));

    // Assess
    for (const [rule, cell] of Object.entries(cells))
      expect(verdict.cells.get(rule as RuleId), rule).toBe(cell);
    expect(verdict.mismatches).toEqual(mismatches);
  });

  it.each<[string, Partial<Scenario>, (Diagnosis | undefined)[], string[]]>([
    ['every GPU with the expected diagnosis', {}, ['fake_load', 'fake_load'], []],
    [
      'one GPU with another',
      {},
      ['fake_load', 'idle'],
      ['expected diagnosis fake_load, got fake_load, idle'],
    ],
    ['a GPU with none stored', {}, [undefined], ['expected diagnosis fake_load, got none']],
    ['no GPU window at all', {}, [], ['expected diagnosis fake_load, no GPU window stored']],
    ['only the judged GPUs', { diagnosis_gpus: [0] }, ['fake_load', 'compute_bound'], []],
    ['no diagnosis labelled', { diagnosis: undefined }, ['idle'], []],
  ])('judges the diagnosis: %s', (_case, labels, diagnoses, mismatches) => {
    // Act
    const verdict = judgeScenario(scenario(labels), observed({ fired: ['fake_load'], diagnoses }));

    // Assess
    expect(verdict.mismatches).toEqual(mismatches);
  });

  it('flags a remediation decision on an efficiency rule, accepts one on a labelled hardware rule', () => {
    // Act
    const efficiency = judgeScenario(scenario(), observed({ fired: ['fake_load'], decided: ['fake_load'] }));
    const hardware = judgeScenario(
      scenario({ expect: ['xid_fatal'], diagnosis: undefined, remediate: ['xid_fatal'] }),
      observed({ fired: ['xid_fatal'], decided: ['xid_fatal'] }),
    );

    // Assess
    expect(efficiency.mismatches).toEqual(['remediation decided on fake_load, which must never remediate']);
    expect(hardware.mismatches).toEqual([]);
  });

  it('flags batches the API did not accept', () => {
    expect(judgeScenario(scenario(), observed({ fired: ['fake_load'], refused: 2 })).mismatches).toEqual([
      '2 batches not accepted by the API',
    ]);
  });
});

describe('formatConfusionMatrix', () => {
  it('prints one row per scenario, one numbered column per rule in use, the diagnosis, the mismatches and the total', () => {
    // Prepare
    const right = judgeScenario(scenario(), observed({ fired: ['fake_load', 'waste_rate'] }));
    const wrong = judgeScenario(
      scenario({ name: 'tensor-idle', expect: ['tensor_idle'], allow: [], diagnosis: 'tensor_idle' }),
      observed({ fired: ['fake_load'], diagnoses: ['fake_load'] }),
    );

    // Act
    const text = formatConfusionMatrix([right, wrong]);
    const lines = text.split('\n');

    // Assess: columns in RULE_IDS order (fake_load, tensor_idle, waste_rate), numbered and named below
    expect(lines).toContain('scenario      1  2  3  diagnosis');
    expect(lines).toContain('fake-load     ✓  ·  ~  fake_load ✓');
    expect(lines).toContain('tensor-idle   !  ✗  ·  fake_load ✗ (expected tensor_idle)');
    expect(text).toMatch(/^Rules:\n +1 fake_load +2 tensor_idle +3 waste_rate$/m);
    expect(text).toContain('  tensor-idle: expected tensor_idle, not raised');
    expect(text).toContain('  tensor-idle: raised fake_load, not expected');
    expect(text).toMatch(/2 scenarios: 1 judged right, 1 wrong\n$/);
  });
});
