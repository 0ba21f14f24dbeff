import type { Batch } from '../../lambdas/contract';
import type { Diagnosis, RuleId } from '../../lambdas/domain';

/**
 * A labelled scenario: one host whose batches go through the real local pipeline (loopback HTTP →
 * ingest handler → DuckDB), and what the pipeline must make of it, after the rules of
 * docs/design.md §6: the rules it must raise, those it may raise, the diagnosis its GPUs must get, and the
 * remediation decisions it may lead to. Every rule not listed must stay quiet.
 */

/** What a scenario's `play` gets: where to send, and the span to simulate. */
export interface ScenarioContext {
  /** Base URL of the loopback API (`POST ${url}/v1/batches`). */
  readonly url: string;
  /** Start of the simulated span (the workload starts here). */
  readonly from: Date;
  /** End of the simulated span: the last batch is sent at this time (the real clock's now). */
  readonly to: Date;
  /** `agent.version` of the batches. */
  readonly agentVersion: string;
  /** A number unique to this scenario in the run, 0..65535 (distinct GPU UUIDs). */
  readonly hostNumber: number;
  /** Seed for the scenario's random streams. */
  readonly seed: number;
  /**
   * Sends batches to the pipeline, in order, over HTTP.
   * @returns how many were not accepted (each logged)
   */
  send(batches: readonly Batch[]): Promise<number>;
  /** Counts batches that never reached the pipeline by another way (an agent's spool left undrained). */
  undelivered(count: number): void;
}

/** One labelled scenario. */
export interface Scenario {
  /** Short name, kebab-case, unique in a suite, e.g. `fake-load`. */
  readonly name: string;
  /** One line for people: what the host does. */
  readonly label: string;
  /** The EC2 instance id the scenario's batches carry: every alert and decision of it is judged. */
  readonly instance_id: string;
  /** Rules that must raise an alert. */
  readonly expect: readonly RuleId[];
  /** Rules that may raise one (a true consequence the labels do not decide either way). @default [] */
  readonly allow?: readonly RuleId[];
  /** The diagnosis each judged GPU's latest window must carry. @default not judged */
  readonly diagnosis?: Diagnosis;
  /** GPU indexes whose diagnosis is judged, or MIG slices as `0/gi9` (GPU 0's instance 9). @default every GPU (slice) of the host */
  readonly diagnosis_gpus?: readonly (number | string)[];
  /**
   * Rules whose findings may lead to a remediation decision (hardware faults). A decision on
   * any other rule is a mismatch: no efficiency finding may ever lead to one. @default []
   */
  readonly remediate?: readonly RuleId[];
  /** Sends the scenario's batches through `ctx` (simulated, replayed, or a real agent's). */
  play(ctx: ScenarioContext): Promise<void>;
}
