import { STORE_KINDS, STORE_VARIABLE } from '../domain/lambda-environment';
import type {
  LastSeen,
  NodeJobMeans,
  RecentWindowsQuery,
  StoredGpuWindow,
  StoreWriteResult,
  TelemetryStore,
  WasteGroupQuery,
  WasteGroupRow,
  WasteQuery,
} from '../domain/ports';
import type { StoreRows, WasteReportRow } from '../domain/types';
import { IngestConfigError, requiredEnv } from './environment';
import { lazily } from './lazy';
import type { SdkClientConfig } from './sdk-client-config';

/**
 * The telemetry store the environment names, for the Lambdas. The settings are read and checked
 * now (cold start fails fast, naming the variable); the adapter module and its AWS SDK clients are
 * loaded on first use, and only the chosen one's, so an Athena deployment never loads the
 * Timestream SDK and the other way round.
 *
 * The variables are those of `STORE_VARIABLES` in `lambdas/domain/lambda-environment.ts`:
 * - `STORE=athena`: `FIREHOSE_GPU_STREAM`, `FIREHOSE_EFA_STREAM`, `FIREHOSE_EVENTS_STREAM`,
 *   `ATHENA_DATABASE`, `ATHENA_WORKGROUP` (reads).
 * - `STORE=timestream`: `TIMESTREAM_DATABASE`, `TIMESTREAM_GPU_TABLE`, `TIMESTREAM_EFA_TABLE`,
 *   `TIMESTREAM_EVENTS_TABLE`.
 *
 * @param env - the environment
 * @param sdk - settings given to every SDK client (a canned `requestHandler` in benchmarks). @default {}
 * @returns the store
 * @throws {IngestConfigError} when `STORE` is missing or not `athena|timestream`, or a variable of the chosen store is missing
 */
export function storeFromEnvironment(env: NodeJS.ProcessEnv, sdk: SdkClientConfig = {}): TelemetryStore {
  const kind = requiredEnv(env, STORE_VARIABLE);
  let load: () => Promise<TelemetryStore>;
  if (kind === 'athena') {
    const streams = {
      gpu_windows: requiredEnv(env, 'FIREHOSE_GPU_STREAM'),
      efa_windows: requiredEnv(env, 'FIREHOSE_EFA_STREAM'),
      events: requiredEnv(env, 'FIREHOSE_EVENTS_STREAM'),
    };
    const database = requiredEnv(env, 'ATHENA_DATABASE');
    const workGroup = requiredEnv(env, 'ATHENA_WORKGROUP');
    load = async () =>
      (await import('./make-athena-store.js')).makeAthenaStore({ streams, database, workGroup }, sdk);
  } else if (kind === 'timestream') {
    const database = requiredEnv(env, 'TIMESTREAM_DATABASE');
    const tables = {
      gpu: requiredEnv(env, 'TIMESTREAM_GPU_TABLE'),
      efa: requiredEnv(env, 'TIMESTREAM_EFA_TABLE'),
      events: requiredEnv(env, 'TIMESTREAM_EVENTS_TABLE'),
    };
    load = async () =>
      (await import('./make-timestream-store.js')).makeTimestreamStore({ database, tables }, sdk);
  } else {
    throw new IngestConfigError(
      `Expected environment variable STORE to be one of ${STORE_KINDS.join(', ')} (set by the CDK stack), got \`${kind}\``,
    );
  }
  return new LazyStore(load);
}

/** A store made on first use (and made again if making it failed). */
class LazyStore implements TelemetryStore {
  readonly #get: () => Promise<TelemetryStore>;

  constructor(load: () => Promise<TelemetryStore>) {
    this.#get = lazily(load);
  }

  async write(rows: StoreRows): Promise<StoreWriteResult> {
    return (await this.#get()).write(rows);
  }

  async queryWaste(query: WasteQuery): Promise<WasteReportRow[]> {
    return (await this.#get()).queryWaste(query);
  }

  async queryWasteBy(query: WasteGroupQuery): Promise<WasteGroupRow[]> {
    return (await this.#get()).queryWasteBy(query);
  }

  async recentWindows(query: RecentWindowsQuery): Promise<StoredGpuWindow[]> {
    return (await this.#get()).recentWindows(query);
  }

  async nodeJobMeans(query: WasteQuery): Promise<NodeJobMeans[]> {
    return (await this.#get()).nodeJobMeans(query);
  }

  async lastSeen(query: WasteQuery): Promise<LastSeen[]> {
    return (await this.#get()).lastSeen(query);
  }
}
