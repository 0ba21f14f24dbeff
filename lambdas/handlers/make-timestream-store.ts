import { TimestreamQueryClient } from '@aws-sdk/client-timestream-query';
import { TimestreamWriteClient } from '@aws-sdk/client-timestream-write';
import { TimestreamStore, type TimestreamStoreOptions } from '../adapters/timestream-store';
import { leanClient, type SdkClientConfig } from './sdk-client-config';

/**
 * Builds the Timestream store (WriteRecords, queries) on its SDK clients. Its own module so a
 * Lambda loads these clients with `import()` only when `STORE=timestream`, on first use.
 *
 * @param settings - database and table names
 * @param sdk - settings given to both clients
 * @returns the store
 */
export function makeTimestreamStore(
  settings: Pick<TimestreamStoreOptions, 'database' | 'tables'>,
  sdk: SdkClientConfig,
): TimestreamStore {
  return new TimestreamStore({
    client: leanClient((config) => new TimestreamWriteClient(config), sdk),
    queryClient: leanClient((config) => new TimestreamQueryClient(config), sdk),
    ...settings,
  });
}
