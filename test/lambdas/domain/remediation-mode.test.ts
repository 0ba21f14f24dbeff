import { describe, expect, it } from 'vitest';
import { parseRemediationMode, RemediationModeError } from '../../../lambdas/domain';

describe('parseRemediationMode', () => {
  it.each([
    ['off', 'off'],
    ['notify', 'notify'],
    [' Replace ', 'replace'],
  ])('parses %j as %s', (text, mode) => {
    // Prepare / Act / Assess
    expect(parseRemediationMode(text)).toBe(mode);
  });

  it.each(['', 'terminate', 'on'])('throws RemediationModeError for %j listing the valid modes', (text) => {
    // Prepare / Act / Assess
    expect(() => parseRemediationMode(text)).toThrow(RemediationModeError);
    expect(() => parseRemediationMode(text)).toThrow(/`off`, `notify`, `replace`/);
  });
});
