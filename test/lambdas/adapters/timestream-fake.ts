import {
  type _Record,
  type RejectedRecord,
  RejectedRecordsException,
  TimestreamWriteClient,
  WriteRecordsCommand,
} from '@aws-sdk/client-timestream-write';
import { mockClient } from 'aws-sdk-client-mock';

/**
 * A mocked TimestreamWriteClient that keeps records and applies Timestream's upsert rules
 * (API_Record): a record with the same dimensions, time and measure name is accepted when new,
 * when its `Version` is higher, or when it is identical; otherwise it is rejected with
 * `ExistingVersion`. Rejections are thrown as `RejectedRecordsException`, accepted ones kept.
 *
 * @returns the client, its mock (for `commandCalls`), and the stored records by key
 */
export function fakeTimestream(): {
  client: TimestreamWriteClient;
  mock: ReturnType<typeof mockClient>;
  stored: Map<string, { version: number; record: _Record }>;
} {
  const client = new TimestreamWriteClient({ region: 'us-east-1' });
  const mock = mockClient(client);
  const stored = new Map<string, { version: number; record: _Record }>();
  mock.on(WriteRecordsCommand).callsFake((input: { TableName?: string; Records?: _Record[] }) => {
    const rejected: RejectedRecord[] = [];
    (input.Records ?? []).forEach((record, RecordIndex) => {
      const dims = [...(record.Dimensions ?? [])].sort((a, b) => (a.Name ?? '').localeCompare(b.Name ?? ''));
      const key = JSON.stringify([input.TableName, dims, record.Time, record.MeasureName]);
      const version = record.Version ?? 1;
      const existing = stored.get(key);
      const same =
        existing !== undefined &&
        JSON.stringify(existing.record.MeasureValues) === JSON.stringify(record.MeasureValues);
      if (existing === undefined || version > existing.version) stored.set(key, { version, record });
      else if (!same)
        rejected.push({
          RecordIndex,
          Reason: 'A record with the same dimensions, time and measure name but a different value exists',
          ExistingVersion: existing.version,
        });
    });
    if (rejected.length > 0) {
      throw new RejectedRecordsException({
        message: 'One or more records have been rejected.',
        $metadata: {},
        RejectedRecords: rejected,
      });
    }
    return { RecordsIngested: { Total: (input.Records ?? []).length } };
  });
  return { client, mock, stored };
}
