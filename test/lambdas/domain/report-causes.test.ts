import { describe, expect, it } from 'vitest';
import { DIAGNOSES } from '../../../lambdas/contract';
import {
  CAUSE_EXPLANATIONS,
  explainCause,
  UNATTRIBUTED,
  UNDIAGNOSED_EXPLANATION,
} from '../../../lambdas/domain';

describe('the causes a report explains', () => {
  it.each([...DIAGNOSES])('explains the diagnosis %s: what it is and its fix', (diagnosis) => {
    // Prepare / Act
    const e = CAUSE_EXPLANATIONS[diagnosis];
    // Assess
    expect(e?.what.length).toBeGreaterThan(20);
    expect(e?.fix.length).toBeGreaterThan(20);
    expect(explainCause(diagnosis)).toBe(e);
  });

  it('explains waste stored without a diagnosis', () => {
    // Prepare / Act / Assess
    expect(explainCause(UNATTRIBUTED)).toBe(UNDIAGNOSED_EXPLANATION);
  });
});
