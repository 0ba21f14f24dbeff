import type { PipelineDeps } from '../../../lambdas/app/pipeline';
import { DEFAULT_RULE_CONTEXT } from '../../../lambdas/domain';
import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import {
  RecordingAlertSink,
  RecordingDecisionSink,
  RecordingRemediator,
  recordingLog,
} from '../handlers/fakes';

/** What {@link embeddedPipeline} builds: the deps and the fakes a test reads back. */
export interface EmbeddedPipeline {
  /** The in-memory DuckDB store, both telemetry and state store of `deps`; close it after the test. */
  readonly store: DuckDbStore;
  readonly decisions: RecordingDecisionSink;
  readonly remediator: RecordingRemediator;
  readonly deps: PipelineDeps;
}

/**
 * Pipeline deps over an in-memory DuckDB store (telemetry and state), recording alert, decision and
 * remediator fakes and a recording log, in `replace` mode, not dry-run, default rules.
 *
 * @param extra - deps to set or override, e.g. `{ remediationDelayS: 900 }`
 * @returns the deps and the pieces a test asserts on
 */
export async function embeddedPipeline(extra: Partial<PipelineDeps> = {}): Promise<EmbeddedPipeline> {
  const store = await DuckDbStore.open(':memory:');
  const decisions = new RecordingDecisionSink();
  const remediator = new RecordingRemediator();
  const deps: PipelineDeps = {
    store,
    state: store,
    alerts: new RecordingAlertSink(),
    decisions,
    remediator,
    log: recordingLog(),
    remediationMode: 'replace',
    dryRun: false,
    rules: DEFAULT_RULE_CONTEXT,
    ...extra,
  };
  return { store, decisions, remediator, deps };
}
