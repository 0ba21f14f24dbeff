import { DEFAULT_XID_POLICY, type XidPolicy } from '../xid-policy';
import { DEFAULT_THRESHOLDS, type Thresholds } from './thresholds';

/** What every rule reads besides its input: thresholds (overridable per deployment) and the XID policy. */
export interface RuleContext {
  readonly thresholds: Thresholds;
  readonly xidPolicy: XidPolicy;
}

/** Default thresholds and the default XID policy (NVIDIA's catalog). */
export const DEFAULT_RULE_CONTEXT: RuleContext = Object.freeze({
  thresholds: DEFAULT_THRESHOLDS,
  xidPolicy: DEFAULT_XID_POLICY,
});
