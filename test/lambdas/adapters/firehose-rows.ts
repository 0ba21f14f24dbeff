import { firehoseJsonKeyMappings } from '../../../lambdas/domain/firehose-json-keys';
import type { TelemetryTable } from '../../../lambdas/domain/store-columns';

/**
 * A Firehose JSON row of `table` as the delivery stream's OpenX JSON SerDe reads it: each short key
 * under its column's name (the stack's `ColumnToJsonKeyMappings`), other keys as they are. Values
 * stay as JSON has them (window times are epoch milliseconds).
 *
 * @param table - the row's table
 * @param json - one JSON row as the Athena store sends it
 * @returns the row by column name
 */
export function firehoseRowColumns(table: TelemetryTable, json: string): Record<string, unknown> {
  const columnOfKey = new Map(Object.entries(firehoseJsonKeyMappings(table)).map(([c, k]) => [k, c]));
  return Object.fromEntries(
    Object.entries(JSON.parse(json) as Record<string, unknown>).map(([k, v]) => [columnOfKey.get(k) ?? k, v]),
  );
}
