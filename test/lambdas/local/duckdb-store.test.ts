import { DuckDbStore } from '../../../lambdas/local/duckdb-store';
import { describeTelemetryStoreContract } from '../store-conformance';

describeTelemetryStoreContract(
  'DuckDbStore',
  async () => {
    const store = await DuckDbStore.open(':memory:');
    return { store, close: () => store.close() };
  },
  { readBack: true },
);
