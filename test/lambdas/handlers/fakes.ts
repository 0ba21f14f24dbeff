import type { AlertSink, DecisionSink, InstanceDirectory, Remediator } from '../../../lambdas/domain/ports';
import type { Alert, AutoScalingGroupInfo, RemediationDecision } from '../../../lambdas/domain/types';
import type { Log } from '../../../lambdas/handlers/log';

/** Records published alerts. */
export class RecordingAlertSink implements AlertSink {
  readonly alerts: Alert[] = [];
  async publish(alert: Alert): Promise<void> {
    this.alerts.push(alert);
  }
}

/** Records remediation decisions. */
export class RecordingDecisionSink implements DecisionSink {
  readonly decisions: RemediationDecision[] = [];
  async record(decision: RemediationDecision): Promise<void> {
    this.decisions.push(decision);
  }
}

/** Records what it was asked to do; throws `failWith` when set. */
export class RecordingRemediator implements Remediator {
  readonly replaced: string[] = [];
  readonly quarantined: string[] = [];
  readonly rebooted: string[] = [];
  failWith: Error | undefined;
  async replace(decision: RemediationDecision): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.replaced.push(decision.instance_id);
  }
  async quarantine(decision: RemediationDecision): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.quarantined.push(decision.instance_id);
  }
  async reboot(decision: RemediationDecision): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.rebooted.push(decision.instance_id);
  }
}

/** A log that keeps its lines for assertions. */
export function recordingLog(): Log & {
  lines: { level: string; message: string; data?: Record<string, unknown> }[];
} {
  const lines: { level: string; message: string; data?: Record<string, unknown> }[] = [];
  return {
    lines,
    info: (message, data) => lines.push({ level: 'info', message, data }),
    warn: (message, data) => lines.push({ level: 'warn', message, data }),
    error: (message, data) => lines.push({ level: 'error', message, data }),
  };
}

/**
 * An instance directory (server-side enrichment) that says every instance runs, is a
 * p5.48xlarge, and belongs to `group`, whatever its batches claim.
 */
export function directoryWithGroup(group: AutoScalingGroupInfo): InstanceDirectory {
  return {
    describe: async (instanceId, region) => ({
      instance_id: instanceId,
      region,
      state: 'running',
      instance_type: 'p5.48xlarge',
      tags: {},
      asg: group,
    }),
  };
}
