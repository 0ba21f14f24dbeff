import type { Batch } from '../../contract';
import type { Finding } from '../types';
import { DEFAULT_XID_POLICY, type XidPolicy } from '../xid-policy';
import { DEFAULT_THRESHOLDS, type Thresholds } from './thresholds';

/** What every point rule reads besides the batch: thresholds and the XID policy. */
export interface RuleContext {
  readonly thresholds: Thresholds;
  readonly xidPolicy: XidPolicy;
}

/** Default thresholds and the default XID policy (NVIDIA's catalog). */
export const DEFAULT_RULE_CONTEXT: RuleContext = Object.freeze({
  thresholds: DEFAULT_THRESHOLDS,
  xidPolicy: DEFAULT_XID_POLICY,
});

/**
 * A point rule: pure, deterministic, reads the batch's events and flush windows only.
 *
 * @param batch - a validated batch
 * @param ctx - thresholds and XID policy
 * @param now - the server's clock (rules that need no clock ignore it)
 * @returns findings in a stable order (by GPU, then code)
 */
export type PointRule = (batch: Batch, ctx: RuleContext, now: Date) => Finding[];
