import type { Diagnosis, EventKind, GpuMetrics } from '../contract';
import type { RuleId } from './rule-registry';

/**
 * Domain types shared by the pipeline: ledger entries, stored rows, findings, alerts and
 * remediation decisions. Pure data; no I/O.
 */

/** Alert severity, also the SNS topic an alert goes to. */
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
/** Alert severity union. */
export type Severity = (typeof SEVERITIES)[number];

/** Where the efficiency number of a ledger entry comes from. `none`: neither SM activity nor GPU util was measured. */
export type EfficiencySource = 'sm_active' | 'gpu_util' | 'none';

/** The efficiency diagnoses, published with the contract (one list for the pipeline and the agent's simulations). */
export { DIAGNOSES, type Diagnosis } from '../contract';

/** The waste class a GPU window falls in (docs/design.md §5). `unknown` when efficiency was not measured. */
export type WasteClass = 'idle' | 'held_idle' | 'underused' | 'broken' | 'none' | 'unknown';

/**
 * The waste ledger of one GPU flush window (docs/design.md §5), computed once at ingest and stored with
 * the window so a later price change never rewrites history. All money in USD.
 */
export interface LedgerEntry {
  /** Window length, s (end − start). */
  readonly window_s: number;
  /** GPU-hours the window covers: window_s / 3600; a MIG slice its compute share of that (`1g` of 7: window_s / 3600 / 7). */
  readonly gpu_hours: number;
  /** Instance price used, USD/hour (0 when unpriced). */
  readonly price_usd_per_hour: number;
  /** Where the price came from: `override`, `builtin:<table id>`, or `unpriced`. */
  readonly price_source: string;
  /** GPUs the instance price is split over. */
  readonly gpu_count: number;
  /** price / gpu_count × window_s / 3600. */
  readonly cost_usd: number;
  /** 0..1; absent when neither `sm_active` nor `gpu_util` was measured. */
  readonly efficiency?: number;
  /** `sm_active` (profiling), `gpu_util` (an upper bound on efficiency, so waste is a lower bound), or `none`. */
  readonly efficiency_source: EfficiencySource;
  /**
   * True when who holds the GPU is known: `compute_processes` was measured, or a Kubernetes pod holds
   * the GPU (`k8s`); false means idle vs held-idle could not be told apart.
   */
  readonly processes_known: boolean;
  readonly waste_class: WasteClass;
  /** No compute process and efficiency < 0.01: the whole cost. */
  readonly idle_usd: number;
  /** A process or a Kubernetes pod holds the GPU but efficiency < 0.01: the whole cost. */
  readonly held_idle_usd: number;
  /** Working: cost × (1 − efficiency). */
  readonly underused_usd: number;
  /** After the first fatal hardware event: the whole cost. */
  readonly broken_usd: number;
  /** idle + held_idle + underused + broken. */
  readonly wasted_usd: number;
  /**
   * Lost to throttling, not wasted: (cost − wasted) × max(`thermal_throttle_ratio`,
   * `power_throttle_ratio`), the dollars of the time the clocks were held down below what is billed,
   * counted only on the part of the cost not already wasted, so wasted + throttled ≤ cost and the
   * two never count the same dollar. 0 when neither ratio was measured. Never part of `wasted_usd`.
   */
  readonly throttled_usd: number;
  /**
   * Why this GPU is (or is not) wasting money: the diagnosis of its horizon at ingest (see
   * {@link DIAGNOSES}); absent when the batch carried no horizon for the GPU.
   */
  readonly diagnosis?: Diagnosis;
}

/** One stored GPU flush window (table `gpu_windows`): identity, dimensions, metrics and ledger. */
export interface GpuWindowRow {
  /** Window end, ISO 8601 (the Timestream record time). */
  readonly time: string;
  /** Window start, ISO 8601. */
  readonly start: string;
  readonly instance_id: string;
  readonly instance_type: string;
  readonly region: string;
  readonly az?: string;
  readonly gpu_index: number;
  readonly gpu_uuid?: string;
  readonly gpu_name?: string;
  /** MIG GPU instance (slice) the row measures (the window's `gpu_instance_id`); absent for a whole GPU. */
  readonly gpu_instance_id?: number;
  /** The slice's profile (`1g.10gb`, `3g.40gb`), with `gpu_instance_id`; its `<n>g` set the slice's price share. */
  readonly gpu_instance_profile?: string;
  /** From instance tag `team`, when present. */
  readonly team?: string;
  /** From instance tag `job`, when present. */
  readonly job?: string;
  /**
   * Kubernetes namespace of the pod holding the GPU at the window's end (the window's `k8s`, from
   * dcgm-exporter's pod labels); absent off Kubernetes or when no pod holds the GPU.
   */
  readonly namespace?: string;
  /** Name of the pod holding the GPU (the window's `k8s.pod`); absent when `namespace` is. */
  readonly pod?: string;
  /** Container of that pod holding the GPU, when the exporter names it. */
  readonly container?: string;
  readonly batch_id: string;
  /** Batch `seq`, used as the Timestream record version so a retried batch overwrites itself. */
  readonly seq: number;
  readonly metrics: GpuMetrics;
  readonly ledger: LedgerEntry;
}

/**
 * One stored EFA row (table `efa_windows`): one device/port over a run of consecutive flush windows
 * of one batch (`efaRowsOf`: a p5's 60 s request is one row per device/port, not six).
 */
export interface EfaWindowRow {
  /** End of the row's last window, ISO 8601. */
  readonly time: string;
  /** Start of the row's first window, ISO 8601. */
  readonly start: string;
  readonly instance_id: string;
  readonly instance_type: string;
  readonly device: string;
  readonly port: number;
  readonly seq: number;
  /** Counter deltas over [`start`, `time`) (each the sum of its windows' deltas), by sysfs counter name. */
  readonly deltas: Readonly<Record<string, number>>;
}

/** One stored event (table `events`). */
export interface EventRow {
  /** Event time, ISO 8601. */
  readonly time: string;
  readonly instance_id: string;
  readonly instance_type: string;
  readonly gpu_index?: number;
  readonly pci_bus_id?: string;
  readonly kind: EventKind;
  readonly xid?: number;
  readonly source: string;
  readonly pid?: number;
  readonly process_name?: string;
  readonly detail?: string;
  readonly batch_id: string;
  readonly seq: number;
}

/** Everything one batch writes to the store. */
export interface StoreRows {
  readonly gpu: readonly GpuWindowRow[];
  readonly efa: readonly EfaWindowRow[];
  readonly events: readonly EventRow[];
}

/** What a finding asks for: replace the instance, reset the GPU (human), notify, or nothing. */
export type FindingAction = 'replace' | 'reset' | 'notify' | 'none';

/** The output of a rule: one condition on one instance (and GPU, when it is about one). */
export interface Finding {
  readonly rule: RuleId;
  readonly severity: Severity;
  readonly action: FindingAction;
  readonly instance_id: string;
  readonly instance_type: string;
  readonly gpu_index?: number;
  readonly pci_bus_id?: string;
  /** When the condition was first seen, ISO 8601 (the event time, or the window end). */
  readonly at: string;
  /** One line: what is wrong, with the key number. */
  readonly summary: string;
  /** What to do about it. */
  readonly remedy: string;
  /** The numbers behind the finding (counts, XID codes, values), for the alert body and the audit. */
  readonly evidence: Readonly<Record<string, string | number | boolean>>;
  /**
   * What tells two findings of one rule on one GPU apart (e.g. `xid94` next to `xid48`), appended to the
   * alert id as `#variant` so the cooldown of one never swallows the other. @default undefined
   */
  readonly variant?: string;
}

/** Where an alert is in its lifecycle: sent while the condition holds, then once more when it stops. */
export type AlertStatus = 'firing' | 'resolved';

/** A finding made into a message: stable id, human subject and body, SNS message attributes. */
export interface Alert {
  /** Stable id `rule:instance_id[:gpu]` (gpu = index, or PCI bus id when the index is unknown). */
  readonly id: string;
  readonly finding: Finding;
  /** ≤ 100 characters (the SNS email subject limit). */
  readonly subject: string;
  /** Plain text: what, where, numbers, what to do. */
  readonly body: string;
  /** SNS message attributes: `severity`, `rule`, `instance_type`, `status`, and `team`/`job` when known. */
  readonly attributes: Readonly<Record<string, string>>;
  /** `firing` (the condition holds) or `resolved` (a window rule judged it gone). @default 'firing' */
  readonly status?: AlertStatus;
}

/**
 * What EC2 and Auto Scaling say about an instance (server-side enrichment, so IMDS instance tags on
 * the host are optional): from EC2 `DescribeInstances` and Auto Scaling
 * `DescribeAutoScalingInstances` / `DescribeAutoScalingGroups`, in the instance's own region.
 */
export interface InstanceInfo {
  readonly instance_id: string;
  /** The region asked (the batch's `host.region`). */
  readonly region: string;
  /** EC2 instance state name: `pending`, `running`, `stopping`, `stopped`, `shutting-down`, `terminated`. */
  readonly state: string;
  /** EC2 instance type, e.g. `p5.48xlarge`. */
  readonly instance_type: string;
  /** EC2 instance tags (key → value). */
  readonly tags: Readonly<Record<string, string>>;
  /** ARN of the instance profile attached to the instance, when one is. */
  readonly instance_profile_arn?: string;
  /**
   * Names of the roles in that instance profile (IAM `GetInstanceProfile`; a profile holds at most
   * one). Absent when not looked up; empty when the profile holds none.
   */
  readonly instance_profile_role_names?: readonly string[];
  /** The Auto Scaling group the instance belongs to, when it belongs to one. */
  readonly asg?: AutoScalingGroupInfo;
}

/** An Auto Scaling group as the remediation policy needs it. */
export interface AutoScalingGroupInfo {
  /** `AutoScalingGroupName`. */
  readonly name: string;
  /** `DesiredCapacity`, instances ≥ 0. */
  readonly desired_capacity: number;
  /** Group tags (key → value); the opt-out tag may sit here. */
  readonly tags: Readonly<Record<string, string>>;
}

/**
 * What remediation did, or would do in dry-run, for a finding: `reboot` (EC2 RebootInstances, for a
 * fault a GPU reset clears), `replace` (Auto Scaling), `quarantine` (tag, outside a group), `notify`,
 * `skip`, `escalate` (a human must act); with a grace period (`remediationDelayS`), `scheduled` (the
 * notice "replacing i-… in N minutes": a reboot or replacement runs at `pending.due_at`) and
 * `cancelled` (the instance recovered or a human acknowledged before it was due).
 */
export type RemediationAction =
  | 'reboot'
  | 'replace'
  | 'quarantine'
  | 'notify'
  | 'skip'
  | 'escalate'
  | 'scheduled'
  | 'cancelled';

/** The reboot or replacement a `scheduled` or `cancelled` decision is about (the grace period, docs/remediation.md). */
export interface PendingAction {
  /** What runs when due: `reboot` or `replace` (outside a group a `replace` becomes a quarantine). */
  readonly action: 'reboot' | 'replace';
  /** When the notice went out, ISO 8601. */
  readonly decided_at: string;
  /** When it runs (decided_at + `remediationDelayS`), ISO 8601. */
  readonly due_at: string;
}

/** One remediation decision: the audit record of what was decided and why. */
export interface RemediationDecision {
  readonly rule: RuleId;
  readonly severity: Severity;
  readonly instance_id: string;
  readonly gpu_index?: number;
  readonly asg_name?: string;
  /** The instance's region (`host.region`): where the remediation's EC2 / Auto Scaling calls go. */
  readonly region?: string;
  readonly action: RemediationAction;
  /** Why this action (e.g. "in Auto Scaling group g; SetInstanceHealth(Unhealthy)", "opt-out tag", "rate limit: 2 in the last hour"). */
  readonly reason: string;
  /** Decision time, ISO 8601. */
  readonly at: string;
  readonly alert_id: string;
  /** True when nothing was executed (local mode, or remediation mode `notify`). */
  readonly dry_run: boolean;
  /** For `scheduled` and `cancelled`: the pending reboot or replacement. @default undefined */
  readonly pending?: PendingAction;
}

/** The ledger summed over some GPU windows (docs/design.md §5): GPU-hours and USD per waste class. */
export interface LedgerSums {
  readonly gpu_hours: number;
  readonly cost_usd: number;
  readonly idle_usd: number;
  readonly held_idle_usd: number;
  readonly underused_usd: number;
  readonly broken_usd: number;
  readonly wasted_usd: number;
  /** Lost to thermal or power throttling (see `LedgerEntry.throttled_usd`); not part of `wasted_usd`. */
  readonly throttled_usd: number;
}

/** One GPU's row of the waste report, summed over a time range. */
export interface WasteReportRow extends LedgerSums {
  readonly instance_id: string;
  readonly instance_type: string;
  readonly gpu_index: number;
  /** The MIG slice (GPU instance id) the row sums, where the GPU was split; absent for a whole GPU. */
  readonly gpu_instance_id?: number;
  /** The slice's profile (`1g.10gb`), with `gpu_instance_id`. */
  readonly gpu_instance_profile?: string;
  readonly team?: string;
  readonly job?: string;
  /** AWS region of the instance (the latest window's `host.region`); absent where the store keeps none. */
  readonly region?: string;
  /** Availability Zone of the instance (the latest window's `host.az`); absent when unknown. */
  readonly az?: string;
  /** Kubernetes namespace of the pod that last held the GPU (dcgm-exporter's label); absent off Kubernetes. */
  readonly namespace?: string;
  /**
   * GPU-hours of the windows classed `idle` or `held_idle` (efficiency < 1 %), h, ≥ 0: idle time
   * even where the host is unpriced. Absent from a store read that did not sum it.
   */
  readonly idle_gpu_hours?: number;
  /** GPU-hour-weighted mean efficiency over the windows where it was measured; absent if never. */
  readonly efficiency?: number;
  /** `sm_active`, `gpu_util`, `mixed`, or `none`. */
  readonly efficiency_source: string;
  /** Price used (the latest window's), USD/hour. */
  readonly price_usd_per_hour: number;
  readonly price_source: string;
  /** True if any window had unknown compute processes (idle vs held-idle not told apart). */
  readonly processes_unknown: boolean;
  /**
   * `wasted_usd` split by the diagnosis stored with each window (why the dollars were wasted), USD;
   * only diagnoses with waste > 0 are present. Windows stored without a diagnosis (no horizon in their
   * batch) are in `wasted_usd` but in no entry here.
   */
  readonly wasted_by_diagnosis_usd: Partial<Record<Diagnosis, number>>;
}
