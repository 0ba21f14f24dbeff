import type { Batch } from '../../contract';
import type { InstancePrice } from '../pricing';
import type { RuleId } from '../rule-registry';
import type { Diagnosis, Finding } from '../types';
import { evaluateWindowRules } from './evaluate-window-rules';
import { windowSlotKey } from './gpu-ref';
import { type IdleSinceUpdate, judgedHorizons, nextIdleSince } from './horizon-input';
import type { RuleContext } from './rule-context';

/** What the window rules made of one batch. */
export interface WindowJudgement {
  /** Every window finding, in `WINDOW_RULES` order. */
  readonly findings: readonly Finding[];
  /** The window rules that could judge this batch (their firing alerts without a finding resolve). */
  readonly judged: ReadonlySet<RuleId>;
  /**
   * GPU key (`windowSlotKey`: `3`, a MIG slice `3/gi7`) → diagnosis of its judged horizon, stored with the GPU's flush windows; a GPU with a
   * flush window but no horizon that covers enough to judge yet is `awaiting_diagnosis` (its waste
   * is counted under that name, never under no cause).
   */
  readonly diagnoses: ReadonlyMap<string, Diagnosis>;
  /** The idle marks to write and clear after the batch is stored. */
  readonly idle: IdleSinceUpdate;
}

/**
 * Judges one batch's horizon windows (docs/design.md §6): the diagnosis per GPU, the window rules,
 * and the idle marks `idle_billed` needs. The instance's stored idle marks count only when the
 * batch has a horizon to judge (a batch without one neither extends nor clears them). Pure.
 *
 * @param batch - a validated batch, events attributed to GPUs
 * @param rules - thresholds and XID policy
 * @param price - the instance price (waste rates)
 * @param storedIdle - gpuKey → idle since, ISO 8601, as the state store has it
 * @param now - the server's clock
 * @returns findings, judging rules, diagnoses and idle-mark changes
 */
export function judgeWindows(
  batch: Batch,
  rules: RuleContext,
  price: InstancePrice,
  storedIdle: ReadonlyMap<string, string>,
  now: Date,
): WindowJudgement {
  const { gpus, shortGpus } = judgedHorizons(batch, rules.thresholds, price);
  const previous = gpus.length > 0 ? storedIdle : new Map<string, string>();
  const idle = nextIdleSince(previous, gpus, rules.thresholds);
  const { findings, judged } = evaluateWindowRules(
    { batch, gpus, shortGpus, price, idleSince: idle.since },
    rules,
    now,
  );
  const diagnoses = new Map<string, Diagnosis>(gpus.map((g) => [windowSlotKey(g.window), g.diagnosis]));
  for (const w of batch.windows)
    if (w.kind === 'flush' && !diagnoses.has(windowSlotKey(w)))
      diagnoses.set(windowSlotKey(w), 'awaiting_diagnosis');
  return { findings, judged, diagnoses, idle };
}
