import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { describeStateStoreContract } from '../state-conformance';

describeStateStoreContract('DuckDbStore', async () => {
  const store = await DuckDbStore.open(':memory:');
  return { store, close: () => store.close() };
});
