import { JOB_TAG, TEAM_TAG } from '../constants';
import type { RuleId } from '../rule-registry';
import type { Finding, Severity } from '../types';
import type { HorizonGpu, HorizonInput } from './horizon-input';
import type { Thresholds } from './thresholds';

/** Parts of an instance-wide window finding that differ per rule. */
export interface WindowFindingParts {
  readonly rule: RuleId;
  readonly severity: Severity;
  /** The GPUs the finding is about (listed in the summary and evidence); empty for the whole instance. */
  readonly gpus: readonly HorizonGpu[];
  /** What is wrong, after `<job> on GPUs 1,2: ` (no subject: `tensor cores idle (…)`). */
  readonly what: string;
  /** What to do about it (the fix sent with the alert). */
  readonly remedy: string;
  /** The numbers (per-GPU values, thresholds), besides `gpus`, `horizon_s` and `wasted_usd_per_hour`. */
  readonly evidence: Readonly<Record<string, string | number | boolean>>;
  /** What it costs, USD/hour; @default the sum of the GPUs' `wastedUsdPerHour` */
  readonly wastedUsdPerHour?: number;
  /**
   * False for a finding with no dollar meaning (hardware or fabric health: replays, CRC errors,
   * drops, memory pressure, throttling, a missing profiling source): its summary says no
   * `costs $…/h` and its evidence has no `wasted_usd_per_hour`, so nobody reads "$0.00/h" as "free".
   * @default true
   */
  readonly costed?: boolean;
}

/** What a window rule says about the GPUs it fired on: the message parts computed from them. */
export interface RuleMessageSpec {
  /** What is wrong with the job on these GPUs (no subject; the numbers go in the evidence). */
  readonly what: (gpus: readonly HorizonGpu[], t: Thresholds) => string;
  /** What to do about it (the fix sent with the alert). */
  readonly remedy: string;
  /** The measured numbers behind it. */
  readonly evidence: (
    gpus: readonly HorizonGpu[],
    t: Thresholds,
  ) => Record<string, string | number | boolean>;
}

/** Rounds for people: 3 significant digits. */
export function round3(value: number): number {
  return Number(value.toPrecision(3));
}

/** A 0..1 fraction as a whole percentage, `12 %`. */
export function percent(value: number): string {
  return `${Math.round(value * 100)} %`;
}

/**
 * Per-GPU values of one metric for the evidence: `GPU0 12 %, GPU3 9 %`; GPUs without it are left out.
 *
 * @param gpus - the GPUs
 * @param pick - the value of a GPU, or undefined when absent
 * @param format - how to print a value
 * @returns the list, or `absent` when no GPU has the metric
 */
export function perGpu(
  gpus: readonly HorizonGpu[],
  pick: (g: HorizonGpu) => number | undefined,
  format: (v: number) => string = percent,
): string {
  const parts = gpus.flatMap((g) => {
    const v = pick(g);
    return v === undefined ? [] : [`GPU${g.window.gpu.index} ${format(v)}`];
  });
  return parts.length === 0 ? 'absent' : parts.join(', ');
}

/** Who runs on the instance, for the message: `job pretrain-7b (team llm)`, `team llm`, or `the job`. */
export function jobOf(input: HorizonInput): string {
  const tags = input.batch.host.tags ?? {};
  const job = tags[JOB_TAG];
  const team = tags[TEAM_TAG];
  if (job !== undefined) return team === undefined ? `job ${job}` : `job ${job} (team ${team})`;
  return team === undefined ? 'the job' : `team ${team}'s job`;
}

/**
 * Builds the one finding a window rule gives for an instance (alert id `rule:instance_id`): the
 * summary names the job, the GPUs and (unless `costed: false`) the dollars per hour; `at` = the latest horizon end (or the
 * batch's `sent_at` when no GPU is named); action `notify` (a window rule never asks for remediation).
 *
 * @param input - the rule's input
 * @param parts - what differs per rule
 * @returns the finding
 */
export function windowFinding(input: HorizonInput, parts: WindowFindingParts): Finding {
  const { host } = input.batch;
  const usdPerHour = parts.wastedUsdPerHour ?? parts.gpus.reduce((sum, g) => sum + g.wastedUsdPerHour, 0);
  const ends = parts.gpus.map((g) => g.window.end).sort();
  const horizonS = parts.gpus.length === 0 ? undefined : Math.min(...parts.gpus.map((g) => g.spanS));
  // A MIG slice is named with its GPU: `0/gi7` (GPU 0's instance 7).
  const list = parts.gpus
    .map((g) =>
      g.window.gpu_instance_id === undefined
        ? `${g.window.gpu.index}`
        : `${g.window.gpu.index}/gi${g.window.gpu_instance_id}`,
    )
    .join(',');
  const gpuPhrase =
    parts.gpus.length === 0 ? '' : parts.gpus.length === 1 ? ` on GPU ${list}` : ` on GPUs ${list}`;
  const costed = parts.costed ?? true;
  const money = !costed
    ? ''
    : input.price.price_usd_per_hour > 0
      ? `, costs $${usdPerHour.toFixed(2)}/h`
      : ' (unpriced)';
  return {
    rule: parts.rule,
    severity: parts.severity,
    action: 'notify',
    instance_id: host.instance_id,
    instance_type: host.instance_type,
    at: ends[ends.length - 1] ?? input.batch.sent_at,
    summary: `${jobOf(input)}${gpuPhrase}: ${parts.what}${money}`,
    remedy: parts.remedy,
    evidence: {
      ...(list === '' ? {} : { gpus: list }),
      ...(horizonS === undefined ? {} : { horizon_s: Math.round(horizonS) }),
      ...parts.evidence,
      ...(costed
        ? { wasted_usd_per_hour: round3(usdPerHour), price_usd_per_hour: input.price.price_usd_per_hour }
        : {}),
    },
  };
}
