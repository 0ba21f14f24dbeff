import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import {
  type CostModel,
  type CostModelInput,
  DEFAULT_COST_MODEL_INPUT,
  EFA_ENTRIES_PER_DEVICE,
  efaRowsPerRequest,
  pipelineCost,
  windowsPerRequest,
} from '../cost-model/pipeline-cost';
import { SERVICE_PRICES } from '../cost-model/service-prices';
import {
  RESOURCE_BILLING,
  readStackResources,
  type StackResources,
  type StackTemplate,
} from '../cost-model/stack-resources';

/** The pipeline's cost target, USD per GPU-month (BENCHMARKS.md, current figures against targets). */
export const TARGET_USD_PER_GPU_MONTH = 0.1;

/** Fleet sizes, GPUs, the command prices besides `fleetGpus`: the fixed costs shared by more or fewer GPUs. */
export const FLEET_SIZES_GPUS = [8, 64, 512, 4096] as const;

/** Output formats of `gpu-sentinel cost-model`. */
export const COST_MODEL_FORMATS = ['text', 'json'] as const;

/** Options of `gpu-sentinel cost-model` (commander's camelCase names); absent = the default deployment. */
export interface CostModelCommandOptions extends Partial<CostModelInput> {
  /** @default 'text' */
  readonly format?: (typeof COST_MODEL_FORMATS)[number];
  /**
   * The synthesized template to price.
   * @default - the stack synthesized now with the given `store` ({@link synthesizeStackTemplate})
   */
  readonly template?: StackTemplate;
}

/**
 * `gpu-sentinel cost-model`: synthesizes the stack, lists its billed resources, and prints the AWS
 * cost of one GPU-month item by item with each price and its source: the fixed monthly cost of the
 * deployment apart, the total against {@link TARGET_USD_PER_GPU_MONTH}, and the cost per GPU-month
 * at each of {@link FLEET_SIZES_GPUS}.
 *
 * @param opts - overrides of {@link DEFAULT_COST_MODEL_INPUT}, the format, a template
 * @param write - where the output goes
 * @returns the exit code: 0 (a miss of the target is reported, not an error)
 * @throws {CostModelInputError} naming an option out of range
 * @throws {UnknownResourceTypeError} when the stack holds a resource type the model does not price
 */
export function runCostModelCommand(opts: CostModelCommandOptions, write: (s: string) => void): number {
  const { format = 'text', template, ...overrides } = opts;
  const input: CostModelInput = { ...DEFAULT_COST_MODEL_INPUT, ...definedOnly(overrides) };
  const stack = readStackResources(template ?? synthesizeStackTemplate({ store: input.store }));
  const model = pipelineCost(input, stack);
  const bySize = FLEET_SIZES_GPUS.map((gpus) => pipelineCost({ ...input, fleetGpus: gpus }, stack));
  write(
    format === 'json'
      ? `${JSON.stringify(costModelJson(model, bySize), null, 2)}\n`
      : costModelText(model, bySize),
  );
  return 0;
}

/**
 * Synthesizes the stack in a child process (`bin/cost-model/synth-template.ts`, run by tsx) and
 * returns its template: the CLI itself never loads aws-cdk-lib. Takes a few seconds.
 *
 * @param props - stack props as JSON values, e.g. `{ store: 'timestream' }`
 * @returns the template
 * @throws {Error} when the synth fails (its stderr in the message)
 */
export function synthesizeStackTemplate(props: Readonly<Record<string, unknown>>): StackTemplate {
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  const script = fileURLToPath(new URL('../cost-model/synth-template.ts', import.meta.url));
  const out = execFileSync(process.execPath, ['--import', tsx, script, JSON.stringify(props)], {
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  return JSON.parse(out) as StackTemplate;
}

function definedOnly(o: Partial<CostModelInput>): Partial<CostModelInput> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<CostModelInput>;
}

/** The model as JSON: inputs, billed resources, items with price and source, totals, the fleet sizes. */
export function costModelJson(model: CostModel, bySize: readonly CostModel[] = []) {
  return {
    input: model.input,
    resources: billedResourceCounts(model.stack),
    requests_per_gpu_month: model.requestsPerGpuMonth,
    windows_per_gpu_month: model.windowsPerGpuMonth,
    items: model.items.map((i) => ({
      service: i.service,
      meter: i.price,
      what: i.what,
      fixed: i.fixed,
      units_per_month: i.unitsPerMonth,
      usd_per_month: i.usdPerMonth,
      usd_per_gpu_month: i.usdPerGpuMonth,
      price_usd: SERVICE_PRICES[i.price].usd,
      unit: SERVICE_PRICES[i.price].unit,
      source: SERVICE_PRICES[i.price].source,
    })),
    fixed_usd_per_month: model.fixedUsdPerMonth,
    total_usd_per_gpu_month: model.totalUsdPerGpuMonth,
    target_usd_per_gpu_month: TARGET_USD_PER_GPU_MONTH,
    by_fleet_size: bySize.map((m) => ({
      fleet_gpus: m.input.fleetGpus,
      usd_per_gpu_month: m.totalUsdPerGpuMonth,
      fixed_usd_per_month: m.fixedUsdPerMonth,
    })),
  };
}

/** The model as text: the stack's billed resources, the items, the fixed cost, the totals. */
export function costModelText(model: CostModel, bySize: readonly CostModel[] = []): string {
  const { input } = model;
  const lines = [
    `AWS cost per GPU-month: ${input.store} store, ${input.api.toUpperCase()} API, ${input.gpusPerInstance} GPUs per instance (${input.efaDevicesPerInstance} EFA devices: ${input.efaDevicesPerInstance * EFA_ENTRIES_PER_DEVICE} EFA entries per window, ${efaRowsPerRequest(input)} efa_windows rows per request), ` +
      `${input.windowsPerBatch} windows of ${input.windowS} s per batch, ${windowsPerRequest(input)} per request (${model.requestsPerGpuMonth.toFixed(0)} requests per GPU-month), ` +
      `${input.retentionMonths} months kept, ${input.fleetGpus} GPUs (${(input.multiNodeInstanceShare * 100).toFixed(0)} % of instances in multi-node jobs)`,
    '',
    'Billed resources of the synthesized stack:',
    ...billedResourceCounts(model.stack).map(
      (r) => `  ${String(r.count).padStart(3)} ${r.type.padEnd(38)} ${r.billing}: ${r.how}`,
    ),
    '',
    `${'service'.padEnd(12)}${'meter'.padEnd(31)}${'units/month'.padStart(14)}${'USD/month'.padStart(11)}${'USD/GPU-month'.padStart(15)}  what; price (source)`,
  ];
  for (const i of model.items) {
    const price = SERVICE_PRICES[i.price];
    lines.push(
      `${i.service.padEnd(12)}${i.price.padEnd(31)}${formatUnits(i.unitsPerMonth).padStart(14)}${i.usdPerMonth.toFixed(2).padStart(11)}${i.usdPerGpuMonth.toFixed(5).padStart(15)}  ${i.fixed ? '[fixed] ' : ''}${i.what}; ${formatPrice(price.usd)} ${price.unit} (${price.source})`,
    );
  }
  const meets = model.totalUsdPerGpuMonth <= TARGET_USD_PER_GPU_MONTH;
  const perGpu = model.totalUsdPerGpuMonth - model.fixedUsdPerMonth / input.fleetGpus;
  lines.push(
    '',
    `fixed: $${model.fixedUsdPerMonth.toFixed(2)} per month for the deployment, whatever its size ([fixed] items)`,
    `per GPU: $${perGpu.toFixed(4)} per GPU-month of items that grow with the fleet`,
    `total: $${model.totalUsdPerGpuMonth.toFixed(4)} per GPU-month at ${input.fleetGpus} GPUs — ${meets ? 'meets' : 'MISSES'} the target of ≤ $${TARGET_USD_PER_GPU_MONTH.toFixed(2)}`,
  );
  if (bySize.length > 0) {
    lines.push(
      `by fleet size: ${bySize.map((m) => `${m.input.fleetGpus} GPUs $${m.totalUsdPerGpuMonth.toFixed(4)}`).join(', ')} per GPU-month`,
    );
  }
  lines.push('Not included: free tiers (prices are those beyond them), in-region data transfer.', '');
  return lines.join('\n');
}

/** The stack's billed resource types (`monthly` and `use`), with their count and how each is billed. */
function billedResourceCounts(
  stack: StackResources,
): { type: string; count: number; billing: string; how: string }[] {
  return Object.entries(stack.countsByType)
    .map(([type, count]) => {
      const [billing, how] = RESOURCE_BILLING[type as keyof typeof RESOURCE_BILLING];
      return { type, count, billing, how };
    })
    .filter((r) => r.billing !== 'free')
    .sort((a, b) => a.billing.localeCompare(b.billing) || a.type.localeCompare(b.type));
}

/** USD per unit, or per million units when below a tenth of a cent. */
function formatPrice(usd: number): string {
  return usd < 0.001 ? `$${Number((usd * 1e6).toPrecision(6))} per million` : `$${usd} per`;
}

function formatUnits(n: number): string {
  return n >= 100 ? n.toFixed(0) : n.toPrecision(4);
}
