import { DuckDBInstance } from '@duckdb/node-api';
import { describe, expect, it } from 'vitest';
import { efaWindowJson, eventJson, gpuWindowJson } from '../../../lambdas/adapters/firehose-records';
import type { GpuMetrics } from '../../../lambdas/contract';
import { firehoseJsonKeyMappings } from '../../../lambdas/domain/firehose-json-keys';
import { GPU_METRIC_NAMES, GPU_METRIC_TYPES } from '../../../lambdas/domain/measure-types';
import {
  TELEMETRY_REQUIRED_COLUMNS,
  TELEMETRY_TABLE_COLUMNS,
  TELEMETRY_TABLES,
} from '../../../lambdas/domain/store-columns';
import { DUCKDB_SCHEMA_SQL } from '../../../lambdas/local/duckdb-schema';
import { efaRow, eventRow, gpuRow, ledger } from '../rows';
import { DUCKDB_TYPES } from './athena-fake';

/** A GPU row with every metric and every ledger field present. */
function fullGpuRow() {
  const metrics = Object.fromEntries(
    GPU_METRIC_NAMES.map((n) => [n, GPU_METRIC_TYPES[n] === 'BOOLEAN' ? true : 1]),
  ) as unknown as GpuMetrics;
  return gpuRow({
    metrics,
    ledger: ledger({ diagnosis: 'memory_bound' }),
    namespace: 'ml-train',
    pod: 'llama-7b-0',
    container: 'trainer',
    gpu_instance_id: 7,
    gpu_instance_profile: '1g.10gb',
  });
}

describe('one column list for every store', () => {
  it.each([
    ['gpu_windows', () => gpuWindowJson(fullGpuRow())],
    ['efa_windows', () => efaWindowJson(efaRow())],
    ['events', () => eventJson(eventRow({ pid: 4242, process_name: 'python3' }))],
  ] as const)(
    'writes to Firehose exactly the %s columns the Glue table declares, under the keys its SerDe maps (a key Glue lacks is dropped silently)',
    (table, json) => {
      // Prepare
      const declared = TELEMETRY_TABLE_COLUMNS[table].map(([n]) => n);
      const columnOfKey = new Map(Object.entries(firehoseJsonKeyMappings(table)).map(([c, k]) => [k, c]));

      // Act
      const written = Object.keys(JSON.parse(json()) as object).map((k) => columnOfKey.get(k) ?? k);

      // Assess
      expect(written).toEqual(declared);
    },
  );

  it.each(TELEMETRY_TABLES)(
    'gives the local DuckDB table %s the same columns, types and required columns',
    async (table) => {
      // Prepare
      const duck = await DuckDBInstance.create(':memory:');
      const db = await duck.connect();
      for (const ddl of DUCKDB_SCHEMA_SQL) await db.run(ddl);

      // Act
      const described = (await db.runAndReadAll(`DESCRIBE ${table}`)).getRowObjectsJS();
      db.closeSync();
      duck.closeSync();

      // Assess
      expect(described.filter((c) => c.null === 'NO').map((c) => c.column_name)).toEqual(
        TELEMETRY_REQUIRED_COLUMNS[table],
      );
      expect(described.map((c) => [c.column_name, c.column_type])).toEqual(
        TELEMETRY_TABLE_COLUMNS[table].map(([n, t]) => [
          n,
          t === 'TIMESTAMP' ? 'TIMESTAMP WITH TIME ZONE' : DUCKDB_TYPES[t],
        ]),
      );
    },
  );
});
