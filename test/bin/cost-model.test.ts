import { describe, expect, it } from 'vitest';
import {
  type costModelJson,
  runCostModelCommand,
  TARGET_USD_PER_GPU_MONTH,
} from '../../bin/commands/cost-model';
import {
  CostModelInputError,
  DEFAULT_COST_MODEL_INPUT,
  firehoseBilledBytesPerBatch,
  pipelineCost,
} from '../../bin/cost-model/pipeline-cost';
import { SERVICE_PRICES } from '../../bin/cost-model/service-prices';

const usdOf = (model: ReturnType<typeof pipelineCost>, price: string): number =>
  model.items.filter((i) => i.price === price).reduce((n, i) => n + i.usdPerGpuMonth, 0);

describe('the pipeline cost model', () => {
  it('prices the default deployment (60 s batches of 6 windows, 8 GPUs, Athena) at ≤ $0.10 per GPU-month', () => {
    // Prepare
    const input = DEFAULT_COST_MODEL_INPUT;
    // Act
    const model = pipelineCost(input);
    // Assess
    expect(model.requestsPerGpuMonth).toBe(5475); // 730 h × 360 windows/h ÷ 6 per batch ÷ 8 GPUs
    expect(model.windowsPerGpuMonth).toBe(262_800);
    expect(model.totalUsdPerGpuMonth).toBeCloseTo(
      model.items.reduce((n, i) => n + i.usdPerGpuMonth, 0),
      12,
    );
    expect(model.totalUsdPerGpuMonth).toBeLessThanOrEqual(TARGET_USD_PER_GPU_MONTH);
    expect(model.totalUsdPerGpuMonth).toBeGreaterThan(0.05);
  });

  it('bills one API Gateway REST request and one Lambda request per batch', () => {
    // Act
    const model = pipelineCost();
    // Assess
    expect(usdOf(model, 'apiGatewayRestRequest')).toBeCloseTo(5475 * 3.5e-6, 10);
    expect(usdOf(model, 'lambdaRequest')).toBeCloseTo(5475 * 0.2e-6, 10);
    // 512 MiB for 6 ms of CPU + 2 calls × 15 ms, per batch
    expect(usdOf(model, 'lambdaArmGbSecond')).toBeCloseTo(5475 * 0.036 * 0.5 * 0.0000133334, 10);
  });

  it.each([
    [1, 6.0],
    [6, 1.0],
    [12, 0.5],
  ])(
    'scales requests inversely with windows per batch (%i windows: ×%f of the 6-window cost)',
    (windows, factor) => {
      // Act
      const model = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, windowsPerBatch: windows });
      // Assess
      expect(usdOf(model, 'apiGatewayRestRequest')).toBeCloseTo(5475 * 3.5e-6 * factor, 10);
    },
  );

  it.each([
    // rows × (2,233 + 1 newline) bytes, rounded up to 5 KiB per record of ≤ 1,000 KiB
    ['one 10 s window of 8 GPUs', 8, 1, 20_480],
    ['6 windows of 8 GPUs', 8, 6, 107_520],
    ['60 windows of 64 GPUs (9 records of ≤ 458 rows)', 64, 60, 8_586_240],
  ])('bills Firehose in 5 KiB steps per packed record: %s', (_name, gpus, windows, billed) => {
    // Act
    const bytes = firehoseBilledBytesPerBatch({
      gpusPerInstance: gpus,
      windowsPerBatch: windows,
      firehoseRowBytes: 2233,
    });
    // Assess
    expect(bytes).toBe(billed);
  });

  it('keeps the first 30 days in S3 Standard and the rest in Standard-IA, as the stack does from 60 days of retention', () => {
    // Act
    const year = pipelineCost();
    const month = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, retentionMonths: 1 });
    // Assess: 262,800 rows × 356 B = 0.0936 GB per month of data
    const gbPerMonth = (262_800 * 356) / 1e9;
    const standardMonths = 30 / (730 / 24);
    expect(usdOf(year, 's3StandardGbMonth')).toBeCloseTo(gbPerMonth * standardMonths * 0.023, 8);
    expect(usdOf(year, 's3StandardIaGbMonth')).toBeCloseTo(gbPerMonth * (12 - standardMonths) * 0.0125, 8);
    expect(month.items.map((i) => i.price)).not.toContain('s3TransitionRequest');
    expect(month.items.map((i) => i.price)).not.toContain('s3StandardIaGbMonth');
    expect(usdOf(month, 's3StandardGbMonth')).toBeCloseTo(gbPerMonth * 0.023, 8);
  });

  it('prices the Timestream option: 2 write units per 1,430 B record, 24 h in memory, the rest magnetic', () => {
    // Act
    const model = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, store: 'timestream' });
    // Assess
    expect(model.items.map((i) => i.service)).not.toContain('Firehose');
    expect(usdOf(model, 'timestreamWrite')).toBeCloseTo(262_800 * 2 * 0.5e-6, 10);
    expect(usdOf(model, 'timestreamMemoryGbHour')).toBeCloseTo(((8640 * 1430) / 1e9) * 730 * 0.036, 8);
    expect(model.totalUsdPerGpuMonth).toBeGreaterThan(pipelineCost().totalUsdPerGpuMonth);
  });

  it('shares the custom metrics among the fleet', () => {
    // Act
    const small = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, fleetGpus: 64 });
    const large = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, fleetGpus: 4096 });
    // Assess
    expect(usdOf(small, 'cloudwatchCustomMetricMonth')).toBeCloseTo(
      (DEFAULT_COST_MODEL_INPUT.customMetrics * 0.3) / 64,
      10,
    );
    expect(usdOf(large, 'cloudwatchCustomMetricMonth')).toBeCloseTo(
      (DEFAULT_COST_MODEL_INPUT.customMetrics * 0.3) / 4096,
      10,
    );
    expect(DEFAULT_COST_MODEL_INPUT.customMetrics).toBe(44); // 18 names, 4 × 4 Team series, 10 alert pairs
  });

  it.each([
    ['windowS', 0, /`windowS` to be > 0, got `0`/],
    ['windowsPerBatch', Number.NaN, /`windowsPerBatch` to be a finite number ≥ 0, got `NaN`/],
    ['fleetGpus', -1, /`fleetGpus` to be a finite number ≥ 0, got `-1`/],
  ])('refuses %s = %s, naming the field', (field, value, message) => {
    // Act
    const act = () => pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, [field]: value });
    // Assess
    expect(act).toThrow(CostModelInputError);
    expect(act).toThrow(message);
  });
});

describe('gpu-sentinel cost-model', () => {
  it('prints every item with its price and source, and the total against the target', () => {
    // Prepare
    let out = '';
    // Act
    const code = runCostModelCommand({}, (s) => {
      out += s;
    });
    // Assess
    expect(code).toBe(0);
    expect(out).toMatch(/athena store, REST API, 8 GPUs per instance, 6 windows of 10 s per batch/);
    expect(out).toMatch(/apiGatewayRestRequest +5475 +0\.01916 +\$3\.5 per million REST API request/);
    expect(out).toContain(SERVICE_PRICES.firehoseIngestGb.source);
    expect(out).toMatch(/total: \$0\.0\d{3} per GPU-month — meets the target of ≤ \$0\.10/);
  });

  it('answers JSON with the options applied', () => {
    // Prepare
    let out = '';
    // Act
    runCostModelCommand({ format: 'json', store: 'timestream', windowsPerBatch: 1 }, (s) => {
      out += s;
    });
    const json = JSON.parse(out) as ReturnType<typeof costModelJson>;
    // Assess
    expect(json.input).toMatchObject({ store: 'timestream', windowsPerBatch: 1, gpusPerInstance: 8 });
    expect(json.requests_per_gpu_month).toBe(32_850);
    expect(json.items.find((i) => i.meter === 'timestreamWrite')?.unit).toBe(
      SERVICE_PRICES.timestreamWrite.unit,
    );
    expect(json.total_usd_per_gpu_month).toBeGreaterThan(TARGET_USD_PER_GPU_MONTH);
  });
});
