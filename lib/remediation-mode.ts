import type { RemediationMode } from '../lambdas/domain/remediation-mode';

export { REMEDIATION_MODES, type RemediationMode } from '../lambdas/domain/remediation-mode';

/**
 * Default remediation mode of the stack (docs/design.md §8): `replace` (Auto Scaling
 * `SetInstanceHealth(Unhealthy)` for instances in a group, quarantine tag and page for the rest).
 * The modes themselves are the domain's `REMEDIATION_MODES`.
 */
export const DEFAULT_REMEDIATION_MODE: RemediationMode = 'replace';
