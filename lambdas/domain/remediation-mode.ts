import { RemediationModeError } from './errors';

/** Remediation modes (docs/design.md §8): do nothing, only notify, or replace broken instances. */
export const REMEDIATION_MODES = ['off', 'notify', 'replace'] as const;
/** A remediation mode. */
export type RemediationMode = (typeof REMEDIATION_MODES)[number];

/**
 * Parses a remediation mode from configuration (stack prop, environment variable).
 *
 * @param s - the text; surrounding blanks and case are ignored
 * @returns the mode
 * @throws {RemediationModeError} when `s` is not one of `off`, `notify`, `replace`
 * @example
 * parseRemediationMode(process.env.REMEDIATION_MODE ?? 'notify');
 */
export function parseRemediationMode(s: string): RemediationMode {
  const v = typeof s === 'string' ? s.trim().toLowerCase() : s;
  if ((REMEDIATION_MODES as readonly unknown[]).includes(v)) return v as RemediationMode;
  throw new RemediationModeError(
    s,
    `Expected the remediation mode to be one of ${REMEDIATION_MODES.map((m) => `\`${m}\``).join(', ')}, got \`${String(s)}\` (${typeof s}). Set it to \`notify\` to only alert.`,
  );
}
