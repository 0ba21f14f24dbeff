import { CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import {
  type costModelJson,
  FLEET_SIZES_GPUS,
  runCostModelCommand,
  synthesizeStackTemplate,
  TARGET_USD_PER_GPU_MONTH,
} from '../../bin/commands/cost-model';
import { DEFAULT_STACK_RESOURCES } from '../../bin/cost-model/default-stack-resources';
import { lambdaBilledMs } from '../../bin/cost-model/lambda-billing';
import {
  CostModelInputError,
  DEFAULT_COST_MODEL_INPUT,
  efaRowsPerRequest,
  firehoseBilledBytesPerBatch,
  pipelineCost,
  WORST_CASE_FIREHOSE_ROW_BYTES,
  windowsPerRequest,
} from '../../bin/cost-model/pipeline-cost';
import { SERVICE_PRICES } from '../../bin/cost-model/service-prices';
import {
  readStackResources,
  type StackTemplate,
  UnknownResourceTypeError,
} from '../../bin/cost-model/stack-resources';
import { MAX_EFA_PORTS_PER_BATCH } from '../../lambdas/contract';
import { buildStack, sharedStack } from '../lib/build-stack';

type Model = ReturnType<typeof pipelineCost>;
const usdOf = (model: Model, price: string): number =>
  model.items.filter((i) => i.price === price).reduce((n, i) => n + i.usdPerGpuMonth, 0);
const templateOf = (props: Parameters<typeof sharedStack>[0] = {}): StackTemplate =>
  sharedStack(props).template.toJSON() as StackTemplate;

describe('the stack the cost model reads', () => {
  it.each(['athena', 'timestream'] as const)(
    'holds DEFAULT_STACK_RESOURCES.%s equal to the synthesized default stack (the model cannot drift)',
    (store) => {
      // Prepare / Act
      const read = readStackResources(templateOf(store === 'athena' ? {} : { store }));

      // Assess
      expect(read).toEqual(DEFAULT_STACK_RESOURCES[store]);
    },
  );

  it('knows every resource type of a stack with every option on', () => {
    // Prepare
    const template = templateOf({
      store: 'athena',
      tracing: true,
      alertEmails: { critical: ['oncall@example.com'] },
      webAclArn: 'arn:aws:wafv2:us-east-1:123456789012:regional/webacl/acl/0123',
      organizationId: 'o-a1b2c3d4e5',
      ingestReservedConcurrency: 10,
    });

    // Act
    const read = readStackResources(template);

    // Assess
    expect(read.stageTraced).toBe(true);
    expect(read.functions.every((f) => f.traced)).toBe(true);
    expect(read.countsByType['AWS::WAFv2::WebACLAssociation']).toBe(1);
  });

  it('fails on a resource type the model does not price, naming it', () => {
    // Prepare
    const stack = buildStack();
    new CfnResource(stack, 'Nat', { type: 'AWS::EC2::NatGateway', properties: { SubnetId: 'subnet-1' } });

    // Act
    const read = () => readStackResources(Template.fromStack(stack).toJSON() as StackTemplate);

    // Assess
    expect(read).toThrow(UnknownResourceTypeError);
    expect(read).toThrow('`AWS::EC2::NatGateway`');
  });

  it('counts every KMS key, alarm and dashboard of the template, and the schedules’ runs', () => {
    // Prepare
    const template = templateOf();
    const count = (type: string) => Object.values(template.Resources).filter((r) => r.Type === type).length;

    // Act
    const read = readStackResources(template);
    const model = pipelineCost(DEFAULT_COST_MODEL_INPUT, read);

    // Assess
    const units = (price: string) =>
      model.items.filter((i) => i.price === price).reduce((n, i) => n + i.unitsPerMonth, 0);
    expect(units('kmsKeyMonth')).toBe(count('AWS::KMS::Key'));
    expect(units('cloudwatchAlarmMetric')).toBe(count('AWS::CloudWatch::Alarm'));
    expect(units('cloudwatchDashboardMonth')).toBe(count('AWS::CloudWatch::Dashboard'));
    expect(read.rateRunsPerMonth).toBe(8760); // rate(5 minutes) × 730 h
    expect(read.cronRunsPerMonth).toBeCloseTo(730 / 24 + 730 / 24 / 7 + 1, 6); // day, week, month
  });
});

describe('the pipeline cost model', () => {
  it('prices the default deployment with everything counted, fixed costs apart', () => {
    // Prepare / Act
    const model = pipelineCost();

    // Assess
    expect(model.requestsPerGpuMonth).toBe(5475); // 730 h × 360 windows/h ÷ 6 per batch ÷ 8 GPUs
    expect(model.windowsPerGpuMonth).toBe(262_800);
    expect(model.totalUsdPerGpuMonth).toBeCloseTo(
      model.items.reduce((n, i) => n + i.usdPerGpuMonth, 0),
      12,
    );
    expect(model.fixedUsdPerMonth).toBeCloseTo(
      model.items.filter((i) => i.fixed).reduce((n, i) => n + i.usdPerMonth, 0),
      12,
    );
    for (const price of ['kmsKeyMonth', 'cloudwatchAlarmMetric', 'cloudwatchDashboardMonth'] as const) {
      expect(model.items.find((i) => i.price === price)?.fixed).toBe(true);
    }
    expect(model.items.map((i) => i.price)).not.toContain('xrayTraceRecorded'); // tracing off by default
  });

  it('prices 512 GPUs on p5, p4d or without EFA within the target, everything counted (p5 pays for 8× the EFA rows of a p4d)', () => {
    // Act
    const p5 = pipelineCost();
    const p4d = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, efaDevicesPerInstance: 4 });
    const none = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, efaDevicesPerInstance: 0 });
    const worst = pipelineCost({
      ...DEFAULT_COST_MODEL_INPUT,
      efaDevicesPerInstance: 4,
      firehoseRowBytes: WORST_CASE_FIREHOSE_ROW_BYTES,
    });
    // Assess
    expect(p5.input.efaDevicesPerInstance).toBe(32);
    expect(p5.totalUsdPerGpuMonth).toBeLessThanOrEqual(TARGET_USD_PER_GPU_MONTH);
    expect(none.totalUsdPerGpuMonth).toBeLessThanOrEqual(TARGET_USD_PER_GPU_MONTH);
    expect(p4d.totalUsdPerGpuMonth).toBeLessThanOrEqual(TARGET_USD_PER_GPU_MONTH);
    expect(worst.totalUsdPerGpuMonth).toBeLessThanOrEqual(TARGET_USD_PER_GPU_MONTH);
    expect(p5.totalUsdPerGpuMonth).toBeGreaterThan(p4d.totalUsdPerGpuMonth);
  });

  it('merges six p5 windows per request (64 EFA entries each, under the contract cap)', () => {
    // Prepare / Act / Assess
    expect(MAX_EFA_PORTS_PER_BATCH).toBeGreaterThanOrEqual(6 * 64);
    expect(windowsPerRequest({ windowsPerBatch: 6, efaDevicesPerInstance: 32 })).toBe(6);
    expect(windowsPerRequest({ windowsPerBatch: 6, efaDevicesPerInstance: 4 })).toBe(6);
    expect(windowsPerRequest({ windowsPerBatch: 6, efaDevicesPerInstance: 0 })).toBe(6);
    expect(windowsPerRequest({ windowsPerBatch: 6, efaDevicesPerInstance: 4000 })).toBe(1);
    expect(pipelineCost().requestsPerGpuMonth).toBe(5475);
  });

  it('bills one API Gateway REST request and one Lambda request per batch', () => {
    // Act
    const model = pipelineCost();
    // Assess
    expect(usdOf(model, 'apiGatewayRestRequest')).toBeCloseTo(5475 * 3.5e-6, 10);
    // 512 MiB for 2.6 ms of CPU at 512/1,769 of a vCPU (9.0 ms) + 2 calls × 15 ms, billed as 39 ms
    const ingestGbS = model.items.find((i) => i.what === 'ingest GB-seconds');
    expect(ingestGbS?.usdPerGpuMonth).toBeCloseTo(5475 * 0.039 * 0.5 * 0.0000133334, 10);
  });

  it.each([
    // CPU ms on a full core, memory MB, waits ms → billed ms
    [2.6, 512, 30, 39], // 0.289 of a vCPU: 9.0 ms of compute
    [2.6, 1769, 30, 33], // one vCPU
    [2.6, 3538, 30, 33], // two vCPUs: single-threaded JavaScript runs no faster
    [0.4, 128, 0, 6], // 128/1,769 of a vCPU: 5.5 ms, billed in whole ms
  ])('bills %d ms of CPU at %d MB with %d ms of waits as %d ms', (cpuMs, mib, waitMs, billed) => {
    expect(lambdaBilledMs(cpuMs, mib, waitMs)).toBe(billed);
  });

  it('bills X-Ray per request when the synthesized stack traces', () => {
    // Prepare
    const traced = readStackResources(templateOf({ tracing: true }));
    // Act
    const model = pipelineCost(DEFAULT_COST_MODEL_INPUT, traced);
    // Assess: one trace per batch, $5 per million
    expect(model.items.find((i) => i.price === 'xrayTraceRecorded' && !i.fixed)?.usdPerGpuMonth).toBeCloseTo(
      5475 * 5e-6,
      10,
    );
  });

  it('bills each rotated key $1 a month plus $1 for each of its first two rotations', () => {
    // Act
    const model = pipelineCost();
    const keys = DEFAULT_STACK_RESOURCES.athena.kmsKeys;
    // Assess
    expect(model.items.find((i) => i.price === 'kmsKeyMonth')?.usdPerMonth).toBe(keys);
    expect(model.items.find((i) => i.price === 'kmsRotationMonth')?.usdPerMonth).toBe(2 * keys);
  });

  it('adds one straggler query per run with multi-node jobs, whatever the share or the fleet size', () => {
    // Prepare
    const fleetQueries = (m: ReturnType<typeof pipelineCost>) =>
      m.items.find((i) => i.price === 'athenaTbScanned' && i.what.startsWith('fleet evaluator'));
    // Act
    const alone = pipelineCost();
    const some = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, multiNodeInstanceShare: 0.1 });
    const jobs = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, multiNodeInstanceShare: 1 });
    const big = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, multiNodeInstanceShare: 1, fleetGpus: 80_000 });
    // Assess: 8,760 runs × queries × max(10 MB, 512 GPUs × 360 × 2 h × 226 B × 0.1)
    const perQuery = Math.max(10e6, 512 * 360 * 2 * 226 * 0.1);
    expect(fleetQueries(alone)?.unitsPerMonth).toBeCloseTo((8760 * 2 * perQuery) / 1e12, 8);
    expect(fleetQueries(jobs)?.what).toContain('3 queries per run');
    expect(fleetQueries(jobs)?.unitsPerMonth).toBeCloseTo((8760 * 3 * perQuery) / 1e12, 8);
    expect(fleetQueries(some)?.unitsPerMonth).toBe(fleetQueries(jobs)?.unitsPerMonth);
    // At 80,000 GPUs a query scans 1.30 GB: bytes grow with the fleet, queries do not.
    expect(fleetQueries(big)?.unitsPerMonth).toBeCloseTo((8760 * 3 * 80_000 * 360 * 2 * 226 * 0.1) / 1e12, 8);
    expect(jobs.totalUsdPerGpuMonth - alone.totalUsdPerGpuMonth).toBeGreaterThan(0);
    expect(jobs.totalUsdPerGpuMonth - alone.totalUsdPerGpuMonth).toBeLessThan(0.01);
  });

  it('bills the efa_windows rows as stored: 32 EFA devices × 2 entries of 502 B per request (its 6 windows summed), packed', () => {
    // Act
    const withEfa = pipelineCost();
    const withoutEfa = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, efaDevicesPerInstance: 0 });
    // Assess: 64 rows × 503 B = 32,192 B, one record, billed 35,840 B (7 × 5 KiB) per request
    expect(efaRowsPerRequest({ efaDevicesPerInstance: 32 })).toBe(64);
    const billedGbPerGpu = (5475 * 35_840) / 1e9;
    expect(usdOf(withEfa, 'firehoseIngestGb') - usdOf(withoutEfa, 'firehoseIngestGb')).toBeCloseTo(
      billedGbPerGpu * 0.029,
      10,
    );
  });

  it('counts EFA rows per request, not per window: twice the windows per request, half the EFA rows', () => {
    // Act
    const efaGb = (windowsPerBatch: number): number => {
      const at = (efaDevicesPerInstance: number) =>
        pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, windowsPerBatch, efaDevicesPerInstance });
      return usdOf(at(32), 's3StandardGbMonth') - usdOf(at(0), 's3StandardGbMonth');
    };
    // Assess
    expect(efaGb(12)).toBeCloseTo(efaGb(6) / 2, 12);
    expect(efaGb(6)).toBeGreaterThan(0);
  });

  it.each([
    [1, 6.0],
    [6, 1.0],
    [12, 0.5],
  ])(
    'scales requests inversely with windows per batch (%i windows: ×%f of the 6-window cost)',
    (windows, factor) => {
      // Act
      const model = pipelineCost({
        ...DEFAULT_COST_MODEL_INPUT,
        efaDevicesPerInstance: 0,
        windowsPerBatch: windows,
      });
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

  it.each([
    [12, 's3GlacierIrGbMonth', 0.004],
    [3, 's3StandardIaGbMonth', 0.0125],
  ])(
    'keeps the first 30 days in S3 Standard and the rest of %i months where the stack moves it (%s)',
    (months, cold, usdPerGbMonth) => {
      // Act
      const model = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, retentionMonths: months });
      // Assess: 262,800 windows × 226 B of GPU row + 5,475 requests × 64 EFA rows × 73 B = 0.085 GB per GPU-month
      const gbPerMonth = (262_800 * 226 + 5475 * 64 * 73) / 1e9;
      const standardMonths = 30 / (730 / 24);
      expect(usdOf(model, 's3StandardGbMonth')).toBeCloseTo(gbPerMonth * standardMonths * 0.023, 8);
      expect(usdOf(model, cold)).toBeCloseTo(gbPerMonth * (months - standardMonths) * usdPerGbMonth, 8);
    },
  );

  it('keeps a month of data in S3 Standard only', () => {
    // Act
    const month = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, retentionMonths: 1 });
    // Assess
    const prices = month.items.map((i) => i.price);
    for (const p of ['s3TransitionRequest', 's3StandardIaGbMonth', 's3GlacierIrGbMonth'] as const)
      expect(prices).not.toContain(p);
    expect(usdOf(month, 's3StandardGbMonth')).toBeCloseTo(
      ((262_800 * 226 + 5475 * 64 * 73) / 1e9) * 0.023,
      8,
    );
  });

  it('prices the Timestream option: 2 write units per 1,565 B GPU record, one per 453 B EFA record, 24 h in memory, the rest magnetic', () => {
    // Act
    const model = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, store: 'timestream' });
    // Assess: a p5's 64 EFA records per request, 5,475 requests per GPU-month
    const efaRecords = 5475 * 64;
    expect(model.items.map((i) => i.service)).not.toContain('Firehose');
    expect(usdOf(model, 'timestreamWrite')).toBeCloseTo((262_800 * 2 + efaRecords) * 0.5e-6, 10);
    expect(model.items.find((i) => i.what.startsWith('EFA records'))?.usdPerGpuMonth).toBeCloseTo(
      efaRecords * 0.5e-6,
      10,
    );
    const gbPerDay = (262_800 * 1565 + efaRecords * 453) / 1e9 / (730 / 24);
    expect(usdOf(model, 'timestreamMemoryGbHour')).toBeCloseTo(gbPerDay * 730 * 0.036, 8);
    expect(model.totalUsdPerGpuMonth).toBeGreaterThan(pipelineCost().totalUsdPerGpuMonth);
  });

  it('writes no Timestream EFA record for an instance without EFA', () => {
    // Act
    const model = pipelineCost({
      ...DEFAULT_COST_MODEL_INPUT,
      store: 'timestream',
      efaDevicesPerInstance: 0,
    });
    // Assess
    expect(model.items.some((i) => i.what.startsWith('EFA records'))).toBe(false);
    expect(usdOf(model, 'timestreamWrite')).toBeCloseTo(262_800 * 2 * 0.5e-6, 10);
  });

  it('shares the fixed costs among the fleet', () => {
    // Act
    const small = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, fleetGpus: 64 });
    const large = pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, fleetGpus: 4096 });
    // Assess
    const metrics = (m: Model) =>
      m.items.find((i) => i.price === 'cloudwatchCustomMetricMonth' && i.what.includes('series'));
    expect(metrics(small)?.usdPerGpuMonth).toBeCloseTo(
      (DEFAULT_COST_MODEL_INPUT.customMetrics * 0.3) / 64,
      10,
    );
    expect(metrics(large)?.usdPerGpuMonth).toBeCloseTo(
      (DEFAULT_COST_MODEL_INPUT.customMetrics * 0.3) / 4096,
      10,
    );
    expect(small.fixedUsdPerMonth).toBeCloseTo(large.fixedUsdPerMonth, 8);
    // 16 dimensionless names, 2 StatusClass, WastedUsd of other and untagged, 3 alert severities
    expect(DEFAULT_COST_MODEL_INPUT.customMetrics).toBe(23);
  });

  it.each([
    ['windowS', 0, /`windowS` to be > 0, got `0`/],
    ['windowsPerBatch', Number.NaN, /`windowsPerBatch` to be a finite number ≥ 0, got `NaN`/],
    ['fleetGpus', -1, /`fleetGpus` to be a finite number ≥ 0, got `-1`/],
    ['multiNodeInstanceShare', 2, /`multiNodeInstanceShare` to be in 0..1, got `2`/],
  ])('refuses %s = %s, naming the field', (field, value, message) => {
    // Act
    const act = () => pipelineCost({ ...DEFAULT_COST_MODEL_INPUT, [field]: value });
    // Assess
    expect(act).toThrow(CostModelInputError);
    expect(act).toThrow(message);
  });
});

describe('gpu-sentinel cost-model', () => {
  it('prints the stack’s billed resources, every item with its price and source, the fixed cost and the fleet sizes', () => {
    // Prepare
    let out = '';
    // Act
    const code = runCostModelCommand({ template: templateOf() }, (s) => {
      out += s;
    });
    // Assess
    expect(code).toBe(0);
    expect(out).toMatch(
      /athena store, REST API, 8 GPUs per instance \(32 EFA devices: 64 EFA entries per window, 64 efa_windows rows per request\), 6 windows of 10 s per batch, 6 per request/,
    );
    expect(out).toMatch(/^ +\d+ AWS::KMS::Key +monthly: key-month/m);
    expect(out).toMatch(/^ +\d+ AWS::CloudWatch::Alarm +monthly/m);
    expect(out).not.toContain('AWS::IAM::Role');
    expect(out).toMatch(
      /apiGatewayRestRequest +2803200 +9\.81 +0\.01916 +ingest requests; \$3\.5 per million/,
    );
    expect(out).toContain(SERVICE_PRICES.kmsKeyMonth.source);
    expect(out).toMatch(/^fixed: \$\d+\.\d\d per month for the deployment/m);
    expect(out).toMatch(
      /^total: \$0\.\d{4} per GPU-month at 512 GPUs — (meets|MISSES) the target of ≤ \$0\.10/m,
    );
    expect(out).toMatch(
      /^by fleet size: 8 GPUs \$\d+\.\d{4}, 64 GPUs \$\d+\.\d{4}, 512 GPUs .*, 4096 GPUs \$0\.\d{4} per GPU-month$/m,
    );
  });

  it('answers JSON with the options applied and the fleet sizes', () => {
    // Prepare
    let out = '';
    // Act
    runCostModelCommand(
      {
        format: 'json',
        store: 'timestream',
        windowsPerBatch: 1,
        template: templateOf({ store: 'timestream' }),
      },
      (s) => {
        out += s;
      },
    );
    const json = JSON.parse(out) as ReturnType<typeof costModelJson>;
    // Assess
    expect(json.input).toMatchObject({ store: 'timestream', windowsPerBatch: 1, gpusPerInstance: 8 });
    expect(json.requests_per_gpu_month).toBe(32_850);
    expect(json.items.find((i) => i.meter === 'timestreamWrite')?.unit).toBe(
      SERVICE_PRICES.timestreamWrite.unit,
    );
    expect(json.total_usd_per_gpu_month).toBeGreaterThan(TARGET_USD_PER_GPU_MONTH);
    expect(json.by_fleet_size.map((s) => s.fleet_gpus)).toEqual([...FLEET_SIZES_GPUS]);
    expect(json.resources.find((r) => r.type === 'AWS::Timestream::Database')?.count).toBe(1);
  });

  it('synthesizes the stack itself when given no template (a child process, no aws-cdk-lib in the CLI)', () => {
    // Act
    const template = synthesizeStackTemplate({ store: 'athena' });
    // Assess
    expect(readStackResources(template)).toEqual(DEFAULT_STACK_RESOURCES.athena);
  }, 180_000);
});
