import type { Remediator } from '../domain/ports';
import type { RemediationDecision } from '../domain/types';

/**
 * Local-mode remediator: never touches any instance. The pipeline runs with `dryRun: true`, so it
 * records decisions without calling this; should it be called, it only remembers the decision.
 */
export class DryRunRemediator implements Remediator {
  /** Decisions that would have been carried out. */
  readonly wouldHave: RemediationDecision[] = [];

  async replace(decision: RemediationDecision): Promise<void> {
    this.wouldHave.push(decision);
  }

  async quarantine(decision: RemediationDecision): Promise<void> {
    this.wouldHave.push(decision);
  }

  async reboot(decision: RemediationDecision): Promise<void> {
    this.wouldHave.push(decision);
  }
}
