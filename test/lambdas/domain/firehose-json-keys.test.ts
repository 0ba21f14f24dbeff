import { describe, expect, it } from 'vitest';
import {
  FIREHOSE_JSON_KEYS,
  firehoseJsonKey,
  firehoseJsonKeyMappings,
} from '../../../lambdas/domain/firehose-json-keys';
import { TELEMETRY_TABLE_COLUMNS, TELEMETRY_TABLES } from '../../../lambdas/domain/store-columns';

describe('the Firehose JSON keys', () => {
  it.each(TELEMETRY_TABLES)('gives every column of %s a key no other column of it has', (table) => {
    // Prepare
    const columns = TELEMETRY_TABLE_COLUMNS[table].map(([n]) => n);

    // Act
    const keys = columns.map((c) => firehoseJsonKey(table, c));

    // Assess
    expect(new Set(keys).size).toBe(columns.length);
  });

  it.each(TELEMETRY_TABLES)(
    'keys %s with a lowercase letter, or a letter and a digit, never a column name, and only its own columns',
    (table) => {
      // Prepare
      const columns = new Set(TELEMETRY_TABLE_COLUMNS[table].map(([n]) => n));

      // Act
      const entries = Object.entries(FIREHOSE_JSON_KEYS[table]);

      // Assess
      for (const [column, key] of entries) {
        expect(columns.has(column), column).toBe(true);
        expect(key).toMatch(/^[a-z][0-9]?$/);
        expect(columns.has(key), key).toBe(false);
      }
      // A column name never has the keys' shape, so a column added later can be written under its name.
      for (const column of columns) expect(column).not.toMatch(/^[a-z][0-9]?$/);
    },
  );

  it('writes a column without a key under its own name, and leaves it out of the mappings', () => {
    // Prepare / Act / Assess
    expect(firehoseJsonKey('gpu_windows', 'power_throttle_ratio_future')).toBe('power_throttle_ratio_future');
    expect(firehoseJsonKeyMappings('gpu_windows')).not.toHaveProperty('power_throttle_ratio_future');
    expect(firehoseJsonKeyMappings('gpu_windows')).toMatchObject({
      time: 'a',
      sm_active: firehoseJsonKey('gpu_windows', 'sm_active'),
    });
  });

  it('keys each column as it did when the keys were fixed (a changed key would misread rows in flight)', () => {
    // Prepare / Act / Assess
    expect(FIREHOSE_JSON_KEYS.gpu_windows).toMatchObject({
      time: 'a',
      instance_id: 'c',
      seq: 's',
      gpu_util: 't',
    });
    expect(FIREHOSE_JSON_KEYS.efa_windows).toMatchObject({ time: 'a', deltas: 'h' });
    expect(FIREHOSE_JSON_KEYS.events).toMatchObject({ time: 'a', seq: 'n' });
  });
});
