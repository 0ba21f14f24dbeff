import { AthenaClient } from '@aws-sdk/client-athena';
import { FirehoseClient } from '@aws-sdk/client-firehose';
import { AthenaStore, type AthenaStoreOptions } from '../adapters/athena-store';
import { leanClient, type SdkClientConfig } from './sdk-client-config';

/**
 * Builds the Athena store (Firehose writes, Athena reads) on its SDK clients. Its own module so a
 * Lambda loads these clients with `import()` only when `STORE=athena`, on first use.
 *
 * @param settings - stream, database and workgroup names
 * @param sdk - settings given to both clients
 * @returns the store
 */
export function makeAthenaStore(
  settings: Pick<AthenaStoreOptions, 'streams' | 'database' | 'workGroup'>,
  sdk: SdkClientConfig,
): AthenaStore {
  return new AthenaStore({
    firehose: leanClient((config) => new FirehoseClient(config), sdk),
    athena: leanClient((config) => new AthenaClient(config), sdk),
    ...settings,
  });
}
