import { HOURS_PER_MONTH } from './billing-units';
import type { AddItem, CostModelInput } from './pipeline-cost';

const GB = 1e9;
const DAYS_PER_MONTH = HOURS_PER_MONTH / 24;

/**
 * The Timestream store: writes, 24 h memory store, magnetic store, for the GPU window records and
 * the EFA records as `TimestreamStore` writes them (one per EFA entry and request, the request's
 * windows summed: `efaRowsOf`), each metered in whole KiB. `efaRecords` is their number a month for
 * the whole fleet (requests × EFA entries per request); `windowsPerGpuMonth` the GPU windows per GPU.
 */
export function addTimestreamStore(
  input: CostModelInput,
  gpus: number,
  windowsPerGpuMonth: number,
  efaRecords: number,
  add: AddItem,
): void {
  const gpuUnits = Math.ceil(input.timestreamRecordBytes / 1024);
  add('Timestream', 'timestreamWrite', 'GPU window records', windowsPerGpuMonth * gpuUnits * gpus, false);
  if (efaRecords > 0)
    add(
      'Timestream',
      'timestreamWrite',
      'EFA records (one per entry and request)',
      efaRecords * Math.ceil(input.timestreamEfaRecordBytes / 1024),
      false,
    );
  const monthGb =
    (windowsPerGpuMonth * input.timestreamRecordBytes * gpus + efaRecords * input.timestreamEfaRecordBytes) /
    GB;
  add(
    'Timestream',
    'timestreamMemoryGbHour',
    'memory store, 24 h',
    (monthGb / DAYS_PER_MONTH) * HOURS_PER_MONTH,
    false,
  );
  add(
    'Timestream',
    'timestreamMagneticGbMonth',
    'magnetic store',
    monthGb * Math.max(1, input.retentionMonths),
    false,
  );
}
