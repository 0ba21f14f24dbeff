import { AthenaStore } from '../../../lambdas/adapters/athena-store';
import { describeTelemetryStoreContract } from '../store-conformance';
import { FAKE_STREAMS, fakeAthenaStore } from './athena-fake';

describeTelemetryStoreContract(
  'AthenaStore (Firehose → Parquet → Athena SQL on DuckDB)',
  async () => {
    const fake = await fakeAthenaStore({ pageSize: 3 });
    const store = new AthenaStore({
      firehose: fake.firehose,
      athena: fake.athena,
      streams: FAKE_STREAMS,
      workGroup: 'gpu-sentinel',
      sleep: async () => undefined,
    });
    return { store, close: () => fake.close() };
  },
  { readBack: true },
);
