/**
 * What the ingest Lambda does about a broken instance (docs/design.md §8):
 * - `off`: nothing beyond the alert;
 * - `notify`: page a human with what to do;
 * - `replace`: Auto Scaling `SetInstanceHealth(Unhealthy)` for instances in a group, quarantine tag
 *   and page for the rest.
 */
export const REMEDIATION_MODES = ['off', 'notify', 'replace'] as const;

/** One of {@link REMEDIATION_MODES}. */
export type RemediationMode = (typeof REMEDIATION_MODES)[number];

/** Default remediation mode of the stack (docs/design.md §8). */
export const DEFAULT_REMEDIATION_MODE: RemediationMode = 'replace';
