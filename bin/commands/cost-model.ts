import {
  type CostModel,
  type CostModelInput,
  DEFAULT_COST_MODEL_INPUT,
  pipelineCost,
} from '../cost-model/pipeline-cost';
import { SERVICE_PRICES } from '../cost-model/service-prices';

/** The pipeline's cost target, USD per GPU-month (BENCHMARKS.md, current figures against targets). */
export const TARGET_USD_PER_GPU_MONTH = 0.1;

/** Output formats of `gpu-sentinel cost-model`. */
export const COST_MODEL_FORMATS = ['text', 'json'] as const;

/** Options of `gpu-sentinel cost-model` (commander's camelCase names); absent = the default deployment. */
export interface CostModelCommandOptions extends Partial<CostModelInput> {
  /** @default 'text' */
  readonly format?: (typeof COST_MODEL_FORMATS)[number];
}

/**
 * `gpu-sentinel cost-model`: prints the AWS cost of one GPU-month of the deployed pipeline, item
 * by item with each price and its source, and the total against {@link TARGET_USD_PER_GPU_MONTH}.
 *
 * @param opts - overrides of {@link DEFAULT_COST_MODEL_INPUT} and the format
 * @param write - where the output goes
 * @returns the exit code: 0 (a miss of the target is reported, not an error)
 * @throws {CostModelInputError} naming an option out of range
 */
export function runCostModelCommand(opts: CostModelCommandOptions, write: (s: string) => void): number {
  const { format = 'text', ...overrides } = opts;
  const input: CostModelInput = { ...DEFAULT_COST_MODEL_INPUT, ...definedOnly(overrides) };
  const model = pipelineCost(input);
  write(format === 'json' ? `${JSON.stringify(costModelJson(model), null, 2)}\n` : costModelText(model));
  return 0;
}

function definedOnly(o: Partial<CostModelInput>): Partial<CostModelInput> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<CostModelInput>;
}

/** The model as JSON: inputs, items with their price and source, total and target. */
export function costModelJson(model: CostModel) {
  return {
    input: model.input,
    requests_per_gpu_month: model.requestsPerGpuMonth,
    windows_per_gpu_month: model.windowsPerGpuMonth,
    items: model.items.map((i) => ({
      service: i.service,
      meter: i.price,
      units_per_gpu_month: i.unitsPerGpuMonth,
      usd_per_gpu_month: i.usdPerGpuMonth,
      price_usd: SERVICE_PRICES[i.price].usd,
      unit: SERVICE_PRICES[i.price].unit,
      source: SERVICE_PRICES[i.price].source,
    })),
    total_usd_per_gpu_month: model.totalUsdPerGpuMonth,
    target_usd_per_gpu_month: TARGET_USD_PER_GPU_MONTH,
  };
}

/** The model as a text table. */
export function costModelText(model: CostModel): string {
  const { input } = model;
  const lines = [
    `AWS cost per GPU-month: ${input.store} store, ${input.api.toUpperCase()} API, ${input.gpusPerInstance} GPUs per instance, ` +
      `${input.windowsPerBatch} windows of ${input.windowS} s per batch (${model.requestsPerGpuMonth.toFixed(0)} requests per GPU-month), ` +
      `${input.retentionMonths} months kept, fixed costs shared by ${input.fleetGpus} GPUs`,
    '',
    `${'service'.padEnd(12)}${'meter'.padEnd(30)}${'units/GPU-month'.padStart(16)}${'USD/GPU-month'.padStart(15)}  price (source)`,
  ];
  for (const i of model.items) {
    const price = SERVICE_PRICES[i.price];
    lines.push(
      `${i.service.padEnd(12)}${i.price.padEnd(30)}${formatUnits(i.unitsPerGpuMonth).padStart(16)}${i.usdPerGpuMonth.toFixed(5).padStart(15)}  ${formatPrice(price.usd)} ${price.unit} (${price.source})`,
    );
  }
  const meets = model.totalUsdPerGpuMonth <= TARGET_USD_PER_GPU_MONTH;
  lines.push(
    '',
    `total: $${model.totalUsdPerGpuMonth.toFixed(4)} per GPU-month — ${meets ? 'meets' : 'MISSES'} the target of ≤ $${TARGET_USD_PER_GPU_MONTH.toFixed(2)}`,
    'Not included: free tiers, KMS requests, in-region data transfer, X-Ray, the report Lambda.',
    '',
  );
  return lines.join('\n');
}

/** USD per unit, or per million units when below a tenth of a cent. */
function formatPrice(usd: number): string {
  return usd < 0.001 ? `$${Number((usd * 1e6).toPrecision(6))} per million` : `$${usd} per`;
}

function formatUnits(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toPrecision(4);
}
