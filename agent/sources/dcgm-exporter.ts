import {
  GPU_UUID_RULE,
  isInRange,
  MAX_GPU_NAME_CHARS,
  METRIC_RANGES,
  type MetricRangeKind,
} from '../../lambdas/contract/field-rules';
import { migComputeShare, migComputeSlices } from '../../lambdas/contract/mig';
import { normalizePciBusId } from '../../lambdas/contract/pci-bus-id';
import type { GpuIdentity, GpuMetrics } from '../../lambdas/contract/schema';
import { DcgmScrapeError } from '../errors';
import { nodeFetch } from '../send/node-fetch';
import { dcgmBlankReason, isDcgmBlankLabel } from './dcgm-blank';
import { type DcgmSeriesValue, liftMigDeviceFields } from './dcgm-mig-device';
import { podKeyOf, resolveSharedWorkloads } from './dcgm-shared';
import { normalizeDcgmSample, parseDcgmSampleLine } from './dcgm-text';
import { DCGM_VIOLATION_FIELD_NAMES, type DcgmViolationCounters, violationCounters } from './dcgm-violation';

/**
 * dcgm-exporter source: parses the Prometheus text exposition of NVIDIA dcgm-exporter
 * (`:9400/metrics`) into per-GPU contract metrics, converting DCGM units to contract units once,
 * here. Field ids: docs/nvml.md §8 (DCGM `dcgm_fields.h`). The parser is pure; the scrape
 * is a separate function with an injectable `fetch`.
 */

/** One GPU's reading in one scrape. */
export interface DcgmGpuReading {
  /** Index from label `gpu`, uuid from `UUID`, name from `modelName`, bus id from `pci_bus_id` (normalised). */
  readonly gpu: GpuIdentity;
  /** Contract metrics, contract units; a field the scrape lacks is absent. */
  readonly metrics: GpuMetrics;
  /** Label `Hostname`, when present. */
  readonly hostname?: string;
  /** Label `DCGM_FI_DRIVER_VERSION`, when present. */
  readonly driver_version?: string;
  /** The other non-empty labels, e.g. `pod`, `namespace`, `container`: the k8s workload holding the GPU. */
  readonly labels: Record<string, string>;
  /**
   * Each pod's labels when the GPU's series name more than one pod (GPU sharing, dcgm-exporter's
   * `--kubernetes-virtual-gpus`: one copy of each series per pod, same device value; `dcgm-shared.ts`).
   * `labels` then holds no pod, so no pod is charged for the whole GPU. Absent otherwise.
   */
  readonly shared_by?: readonly Record<string, string>[];
  /**
   * The GPU's MIG instances (series labelled `GPU_I_ID` / `GPU_I_PROFILE`), by instance id; absent
   * when the GPU is not in MIG mode. The GPU's own `gpu_util` is then the instances' GR engine
   * activity weighted by their share of the GPU's compute slices (see {@link migComputeShare}).
   */
  readonly mig_instances?: readonly DcgmMigInstance[];
  /**
   * Cumulative throttle-time counters where the scrape has them, converted to whole µs:
   * `DCGM_FI_DEV_POWER_VIOLATION` (240) and `DCGM_FI_DEV_THERMAL_VIOLATION` (241). DCGM reports them
   * in **ns** (NVML's `nvmlDeviceGetViolationStatus` time; DCGM's field-id documentation and
   * `dcgm_fields.h`), although older dcgm-exporter counter files print "(in us)" in their HELP text
   * (corrected in NVIDIA/dcgm-exporter pull request 589). They are sample fields, not window
   * metrics: the window turns their growth over its wall time into `power_throttle_ratio` /
   * `thermal_throttle_ratio`. Absent when the scrape has neither; a negative value is reported in
   * `malformed` and left out.
   */
  readonly violation_us?: DcgmViolationCounters;
}

/** One MIG GPU instance (a slice) as dcgm-exporter reports it. */
export interface DcgmMigInstance {
  /** Label `GPU_I_ID`: the GPU instance id on its GPU, integer ≥ 0. */
  readonly gpu_instance_id: number;
  /** Label `GPU_I_PROFILE`, e.g. `1g.10gb`, `3g.40gb`; absent when the exporter gives none. */
  readonly gpu_instance_profile?: string;
  /** Its share of the GPU's compute slices, 0..1 (`1g` of 7 on A100/H100: 1/7); absent for an unreadable profile. */
  readonly compute_share?: number;
  /** `DCGM_FI_PROF_GR_ENGINE_ACTIVE` of the instance, 0..1 (field 1001). */
  readonly gr_engine_active?: number;
  /** `DCGM_FI_DEV_FB_USED` of the instance, bytes (where the exporter gives it per instance). */
  readonly fb_used_bytes?: number;
  /** The instance's other labels (`pod`, `namespace`, `container`: the pod holding the slice). */
  readonly labels: Record<string, string>;
  /** Each pod's labels when the slice's series name more than one pod (as `DcgmGpuReading.shared_by`). */
  readonly shared_by?: readonly Record<string, string>[];
}

/** The violation counters' type, from `dcgm-violation.ts`. */
export type { DcgmViolationCounters };

/** MIG compute slices and shares, from the contract's MIG rules (one home for agent and pipeline). */
export { migComputeShare, migComputeSlices };

/** What {@link parseDcgmExporterText} found. */
export interface DcgmExporterParse {
  /** One reading per GPU (by label `gpu`), ordered by index. */
  readonly gpus: DcgmGpuReading[];
  /** Lines that could not be used: 1-based line number and why (bad syntax, NaN, out of range…). */
  readonly malformed: { line: number; reason: string }[];
  /** Metric names seen that have no contract field, in order of first appearance. */
  readonly ignored_fields: string[];
}

type MetricKey = keyof GpuMetrics;

/** A DCGM field mapped 1:1 onto a contract metric, with its conversion to contract units. */
export interface DirectField {
  /** The contract metric the field becomes. */
  readonly metric: MetricKey;
  /** DCGM units → contract units (percent → 0..1 ratio, MiB → bytes, non-zero → true). */
  readonly convert: (value: number) => number | boolean;
  /** The contract's range of `metric` (field-rules.ts; a test holds it to `GpuMetricsSchema`), or `boolean`. */
  readonly range: MetricRangeKind | 'boolean';
}

const asIs = (v: number): number => v;
const percentToRatio = (v: number): number => v / 100;
const mibToBytes = (v: number): number => v * 1024 * 1024;
const nonZero = (v: number): boolean => v !== 0;

/**
 * DCGM field name → contract metric. Ratios of `DCGM_FI_PROF_*` are already 0..1; both the legacy
 * names and the newer `*_RATIO` names (DCGM 4) map to the same metric. Each value is checked
 * against its metric's contract range before it is kept.
 */
export const DCGM_DIRECT_FIELDS: Readonly<Record<string, DirectField>> = {
  /** 203, percent. */
  DCGM_FI_DEV_GPU_UTIL: { metric: 'gpu_util', convert: percentToRatio, range: 'ratio' },
  /** 204, percent. */
  DCGM_FI_DEV_MEM_COPY_UTIL: { metric: 'mem_copy_util', convert: percentToRatio, range: 'ratio' },
  /** 1002. */
  DCGM_FI_PROF_SM_ACTIVE: { metric: 'sm_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_SM_UTIL_RATIO: { metric: 'sm_active', convert: asIs, range: 'ratio' },
  /** 1003. */
  DCGM_FI_PROF_SM_OCCUPANCY: { metric: 'sm_occupancy', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_SM_OCCUPANCY_RATIO: { metric: 'sm_occupancy', convert: asIs, range: 'ratio' },
  /** 1004. */
  DCGM_FI_PROF_PIPE_TENSOR_ACTIVE: { metric: 'tensor_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_TENSOR_UTIL_RATIO: { metric: 'tensor_active', convert: asIs, range: 'ratio' },
  /** 1005. */
  DCGM_FI_PROF_DRAM_ACTIVE: { metric: 'dram_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_DRAM_UTIL_RATIO: { metric: 'dram_active', convert: asIs, range: 'ratio' },
  /** 1006 / 1007 / 1008. */
  DCGM_FI_PROF_PIPE_FP64_ACTIVE: { metric: 'fp64_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_FP64_UTIL_RATIO: { metric: 'fp64_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_PIPE_FP32_ACTIVE: { metric: 'fp32_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_FP32_UTIL_RATIO: { metric: 'fp32_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_PIPE_FP16_ACTIVE: { metric: 'fp16_active', convert: asIs, range: 'ratio' },
  DCGM_FI_PROF_FP16_UTIL_RATIO: { metric: 'fp16_active', convert: asIs, range: 'ratio' },
  /** 1009 / 1010 / 1011 / 1012, bytes/s. */
  DCGM_FI_PROF_PCIE_TX_BYTES: { metric: 'pcie_tx_bytes_per_s', convert: asIs, range: 'nonNegative' },
  DCGM_FI_PROF_PCIE_RX_BYTES: { metric: 'pcie_rx_bytes_per_s', convert: asIs, range: 'nonNegative' },
  DCGM_FI_PROF_NVLINK_TX_BYTES: { metric: 'nvlink_tx_bytes_per_s', convert: asIs, range: 'nonNegative' },
  DCGM_FI_PROF_NVLINK_RX_BYTES: { metric: 'nvlink_rx_bytes_per_s', convert: asIs, range: 'nonNegative' },
  /** 155, W. */
  DCGM_FI_DEV_POWER_USAGE: { metric: 'power_w', convert: asIs, range: 'watts' },
  /**
   * 164, W: the limit the driver enforces after every limiter (NVML `nvmlDeviceGetEnforcedPowerLimit`,
   * as the NVML source reads it). Not 160 `DCGM_FI_DEV_POWER_MGMT_LIMIT`, the configured limit, which
   * is higher when another limiter caps the board: that is the case worth seeing.
   */
  DCGM_FI_DEV_ENFORCED_POWER_LIMIT: { metric: 'power_limit_w', convert: asIs, range: 'watts' },
  /** 252, MiB. */
  DCGM_FI_DEV_FB_USED: { metric: 'fb_used_bytes', convert: mibToBytes, range: 'count' },
  /** 150 / 140, °C. */
  DCGM_FI_DEV_GPU_TEMP: { metric: 'gpu_temp_c', convert: asIs, range: 'celsius' },
  DCGM_FI_DEV_MEMORY_TEMP: { metric: 'mem_temp_c', convert: asIs, range: 'celsius' },
  /** 100 / 101, MHz. */
  DCGM_FI_DEV_SM_CLOCK: { metric: 'sm_clock_mhz', convert: asIs, range: 'mhz' },
  DCGM_FI_DEV_MEM_CLOCK: { metric: 'mem_clock_mhz', convert: asIs, range: 'mhz' },
  /** 310–313: volatile = since driver load, aggregate = board lifetime. */
  DCGM_FI_DEV_ECC_SBE_VOL_TOTAL: { metric: 'ecc_sbe_volatile', convert: asIs, range: 'count' },
  DCGM_FI_DEV_ECC_DBE_VOL_TOTAL: { metric: 'ecc_dbe_volatile', convert: asIs, range: 'count' },
  DCGM_FI_DEV_ECC_SBE_AGG_TOTAL: { metric: 'ecc_sbe_aggregate', convert: asIs, range: 'count' },
  DCGM_FI_DEV_ECC_DBE_AGG_TOTAL: { metric: 'ecc_dbe_aggregate', convert: asIs, range: 'count' },
  /** 202. */
  DCGM_FI_DEV_PCIE_REPLAY_COUNTER: { metric: 'pcie_replay_count', convert: asIs, range: 'count' },
  /** 392, pages pending retirement (pre-Ampere page retirement): a boolean in the contract. */
  DCGM_FI_DEV_RETIRED_PENDING: { metric: 'retired_pages_pending', convert: nonZero, range: 'boolean' },
  /** 393–396: booleans in the contract. */
  DCGM_FI_DEV_ROW_REMAP_FAILURE: { metric: 'remapped_rows_failure', convert: nonZero, range: 'boolean' },
  DCGM_FI_DEV_ROW_REMAP_PENDING: { metric: 'remapped_rows_pending', convert: nonZero, range: 'boolean' },
};

/**
 * `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (1001): the fraction of time any graphics or compute engine was
 * active. It is `gpu_util` where dcgm-exporter gives no `DCGM_FI_DEV_GPU_UTIL` — always on a MIG GPU,
 * where DCGM does not report utilization per instance and NVIDIA recommends this field instead
 * (NVIDIA/dcgm-exporter issues on MIG utilization; docs/detection.md §4).
 */
const GR_ENGINE_ACTIVE = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE';

/**
 * `DCGM_FI_DEV_MEMORY_TEMP` (140). DCGM gives 0 on boards with no memory sensor it can read (GDDR
 * boards such as L4, L40S, T4, RTX; vGPU guests), as NVML's `NVML_FI_DEV_MEMORY_TEMP` is "not
 * supported" there (NVIDIA/dcgm-exporter issue 460; real scrapes of L4, L40S, T4, RTX 4000 Ada and
 * GRID A100-40C in `test/fixtures/real/dcgm/`). A memory at 0 °C is no reading: `mem_temp_c` is left
 * absent, so `memory_hot` does not judge a board it cannot see.
 */
const MEMORY_TEMP = 'DCGM_FI_DEV_MEMORY_TEMP';

/** Fields combined with others (summed or OR-ed) before they become a metric. */
const COMBINED = new Set([
  GR_ENGINE_ACTIVE,
  'DCGM_FI_DEV_FB_FREE',
  'DCGM_FI_DEV_FB_TOTAL',
  'DCGM_FI_DEV_FB_RESERVED',
  'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
  'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
  'DCGM_FI_DEV_CLOCKS_EVENT_REASONS',
  'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
  ...DCGM_VIOLATION_FIELD_NAMES,
]);

/** Labels that identify the GPU or the exporter, not the workload. */
const IDENTITY_LABELS = new Set([
  'gpu',
  'UUID',
  'pci_bus_id',
  'device',
  'modelName',
  'Hostname',
  'DCGM_FI_DRIVER_VERSION',
  'GPU_I_ID',
  'GPU_I_PROFILE',
]);

/** The series of one GPU or one MIG instance: values, merged labels, each named pod's labels. */
interface SeriesAcc {
  labels: Record<string, string>;
  pods: Map<string, Record<string, string>>;
  values: Map<string, DcgmSeriesValue>;
}

interface GpuAcc extends SeriesAcc {
  identity: Record<string, string>;
  /** MIG instances by `GPU_I_ID`. */
  instances: Map<number, SeriesAcc & { profile?: string }>;
}

/** Adds one series' workload labels and value to a GPU's or instance's accumulator. */
function addSeries(
  acc: SeriesAcc,
  workload: Record<string, string>,
  field: string,
  value: DcgmSeriesValue,
): void {
  Object.assign(acc.labels, workload);
  const pod = podKeyOf(workload);
  if (pod !== undefined && !acc.pods.has(pod)) acc.pods.set(pod, workload);
  acc.values.set(field, value);
}

/**
 * Parses a dcgm-exporter scrape (Prometheus text exposition 0.0.4: `# HELP`/`# TYPE`/comment
 * lines, labels with `\"` `\\` `\n` escapes, optional timestamps, `NaN`/`±Inf`, blank lines).
 * Never throws: bad lines, non-finite values and values outside the contract's range are
 * reported in `malformed` and the field is left absent; fields with no contract metric are
 * listed in `ignored_fields`. `fb_total_bytes` comes from `DCGM_FI_DEV_FB_TOTAL`, else from
 * used + free (+ reserved where DCGM reports it); `nvlink_crc_errors` is FLIT + DATA CRC errors;
 * `clocks_event_reasons` is the OR of both names of field 112. Metric names are read case-blind
 * (`dcgm_fi_prof_gr_engine_active` is the same field) and label `uuid` as `UUID`. A series labelled
 * `GPU_I_ID` is a MIG instance's: it goes to the GPU's `mig_instances`, never over the GPU's own
 * values; a MIG GPU's `gpu_util` is its instances' GR engine activity weighted by compute share, and
 * the board fields its instances repeat (temperatures, power, clocks, error counters) are the GPU's
 * where it has no series of its own (`liftMigDeviceFields`). DCGM's blank values (`dcgm-blank.ts`:
 * 2^63 for int64 fields, 2^47 + 0..3 for doubles, `<<<NULL>>>`-style labels) are no readings: the
 * field or label is left absent (a value is reported in `malformed`), as is a
 * `DCGM_FI_DEV_MEMORY_TEMP` of 0 (a board with no memory sensor).
 *
 * @param text - the scrape body
 * @returns `{ gpus, malformed, ignored_fields }`
 * @example
 * const { gpus } = parseDcgmExporterText(await (await fetch('http://127.0.0.1:9400/metrics')).text());
 */
export function parseDcgmExporterText(text: string): DcgmExporterParse {
  const malformed: { line: number; reason: string }[] = [];
  const ignored = new Set<string>();
  const byIndex = new Map<number, GpuAcc>();
  const lines = text.split(/\r?\n/);
  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const sample = parseDcgmSampleLine(line);
    if (typeof sample === 'string') {
      malformed.push({ line: lineNo, reason: sample });
      return;
    }
    const parsed = normalizeDcgmSample(sample);
    const known = parsed.name in DCGM_DIRECT_FIELDS || COMBINED.has(parsed.name);
    if (!known) {
      ignored.add(parsed.name);
      return;
    }
    const gpuLabel = parsed.labels.gpu;
    const index = gpuLabel !== undefined && /^\d+$/.test(gpuLabel) ? Number(gpuLabel) : Number.NaN;
    if (!Number.isInteger(index) || index > 63) {
      malformed.push({
        line: lineNo,
        reason: `expected a label gpu="0".."63" on ${parsed.name}, got ${gpuLabel === undefined ? 'none' : JSON.stringify(gpuLabel)}`,
      });
      return;
    }
    if (!Number.isFinite(parsed.value)) {
      malformed.push({
        line: lineNo,
        reason: `expected a finite number for ${parsed.name}, got ${parsed.value}; field left absent`,
      });
      return;
    }
    const blank = dcgmBlankReason(parsed.value);
    if (blank !== undefined) {
      malformed.push({
        line: lineNo,
        reason: `${parsed.name} is ${blank}, not a reading; field left absent`,
      });
      return;
    }
    let acc = byIndex.get(index);
    if (!acc) {
      acc = { identity: {}, labels: {}, pods: new Map(), values: new Map(), instances: new Map() };
      byIndex.set(index, acc);
    }
    const instanceLabel = parsed.labels.GPU_I_ID;
    const instanceId =
      instanceLabel !== undefined && /^\d{1,3}$/.test(instanceLabel) ? Number(instanceLabel) : undefined;
    const workload: Record<string, string> = {};
    for (const [k, v] of Object.entries(parsed.labels)) {
      if (v === '' || isDcgmBlankLabel(v)) continue;
      if (IDENTITY_LABELS.has(k)) {
        if (k !== 'GPU_I_ID' && k !== 'GPU_I_PROFILE') acc.identity[k] = v;
      } else workload[k] = v;
    }
    if (instanceId === undefined) {
      addSeries(acc, workload, parsed.name, { value: parsed.value, line: lineNo });
      return;
    }
    let inst = acc.instances.get(instanceId);
    if (!inst) {
      inst = { labels: {}, pods: new Map(), values: new Map() };
      acc.instances.set(instanceId, inst);
    }
    const profile = parsed.labels.GPU_I_PROFILE;
    if (profile && !isDcgmBlankLabel(profile)) inst.profile = profile;
    addSeries(inst, workload, parsed.name, { value: parsed.value, line: lineNo });
  });
  const gpus = [...byIndex.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, acc]) => toReading(index, acc, malformed));
  malformed.sort((a, b) => a.line - b.line);
  return { gpus, malformed, ignored_fields: [...ignored] };
}

function toReading(
  index: number,
  acc: GpuAcc,
  malformed: { line: number; reason: string }[],
): DcgmGpuReading {
  liftMigDeviceFields(
    acc.values,
    [...acc.instances.values()].map((i) => i.values),
    index,
    malformed,
  );
  const metrics: Record<string, number | boolean> = {};
  const set = (
    metric: MetricKey,
    value: number | boolean,
    line: number,
    field: string,
    range: DirectField['range'],
  ): void => {
    if (isMetricValue(range, value)) metrics[metric] = value;
    else
      malformed.push({
        line,
        reason: `${field} gives ${metric} = ${value}, outside the contract's range (${describeRange(range)}); field left absent`,
      });
  };
  for (const [field, { value, line }] of acc.values) {
    const direct = DCGM_DIRECT_FIELDS[field];
    if (direct === undefined || (field === MEMORY_TEMP && value === 0)) continue;
    set(direct.metric, direct.convert(value), line, field, direct.range);
  }
  const v = (f: string) => acc.values.get(f);
  const total = v('DCGM_FI_DEV_FB_TOTAL');
  const used = v('DCGM_FI_DEV_FB_USED');
  const free = v('DCGM_FI_DEV_FB_FREE');
  const reserved = v('DCGM_FI_DEV_FB_RESERVED');
  if (total) set('fb_total_bytes', mibToBytes(total.value), total.line, 'DCGM_FI_DEV_FB_TOTAL', 'count');
  else if (used && free)
    set(
      'fb_total_bytes',
      mibToBytes(used.value + free.value + (reserved?.value ?? 0)),
      free.line,
      'DCGM_FI_DEV_FB_USED + FB_FREE',
      'count',
    );
  if (
    typeof metrics.fb_used_bytes === 'number' &&
    typeof metrics.fb_total_bytes === 'number' &&
    metrics.fb_used_bytes > metrics.fb_total_bytes
  ) {
    malformed.push({
      line: used?.line ?? 0,
      reason: `DCGM_FI_DEV_FB_USED exceeds the framebuffer total; fb_used_bytes and fb_total_bytes left absent`,
    });
    delete metrics.fb_used_bytes;
    delete metrics.fb_total_bytes;
  }
  const flit = v('DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL');
  const data = v('DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL');
  if (flit || data)
    set(
      'nvlink_crc_errors',
      (flit?.value ?? 0) + (data?.value ?? 0),
      (flit ?? data)?.line ?? 0,
      'DCGM_FI_DEV_NVLINK_CRC_*_ERROR_COUNT_TOTAL',
      'count',
    );
  const reasons = [v('DCGM_FI_DEV_CLOCKS_EVENT_REASONS'), v('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS')].filter(
    (r): r is { value: number; line: number } => r !== undefined,
  );
  if (reasons.length > 0) {
    const bad = reasons.find((r) => !Number.isSafeInteger(r.value) || r.value < 0);
    if (bad) set('clocks_event_reasons', bad.value, bad.line, 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'count');
    else
      set(
        'clocks_event_reasons',
        Number(reasons.reduce((mask, r) => mask | BigInt(r.value), 0n)),
        reasons[0]?.line ?? 0,
        'DCGM_FI_DEV_CLOCKS_EVENT_REASONS',
        'count',
      );
  }
  const violation = violationCounters(acc.values, malformed);
  const instances = migInstances(acc);
  const gr = v(GR_ENGINE_ACTIVE);
  if (metrics.gpu_util === undefined && gr) set('gpu_util', gr.value, gr.line, GR_ENGINE_ACTIVE, 'ratio');
  if (metrics.gpu_util === undefined && instances.length > 0) {
    const weighted = instances.filter(
      (i) => i.gr_engine_active !== undefined && i.compute_share !== undefined,
    );
    if (weighted.length > 0)
      metrics.gpu_util = Math.min(
        1,
        weighted.reduce((sum, i) => sum + (i.compute_share ?? 0) * (i.gr_engine_active ?? 0), 0),
      );
  }
  if (metrics.fb_used_bytes === undefined && instances.some((i) => i.fb_used_bytes !== undefined))
    metrics.fb_used_bytes = instances.reduce((sum, i) => sum + (i.fb_used_bytes ?? 0), 0);
  const gpu = toIdentity(index, acc.identity);
  return {
    gpu,
    metrics: metrics as GpuMetrics,
    ...(acc.identity.Hostname ? { hostname: acc.identity.Hostname } : {}),
    ...(acc.identity.DCGM_FI_DRIVER_VERSION ? { driver_version: acc.identity.DCGM_FI_DRIVER_VERSION } : {}),
    ...resolveSharedWorkloads(acc.labels, acc.pods),
    ...(instances.length > 0 ? { mig_instances: instances } : {}),
    ...(violation !== undefined ? { violation_us: violation } : {}),
  };
}

/** The MIG instances of a GPU, by instance id; a value outside 0..1 (GR) or < 0 (FB) is left absent. */
function migInstances(acc: GpuAcc): DcgmMigInstance[] {
  const slices = migComputeSlices(acc.identity.modelName);
  return [...acc.instances.entries()]
    .sort(([a], [b]) => a - b)
    .map(([id, inst]) => {
      const gr = inst.values.get(GR_ENGINE_ACTIVE)?.value;
      const fb = inst.values.get('DCGM_FI_DEV_FB_USED')?.value;
      const share = migComputeShare(inst.profile, slices);
      return {
        gpu_instance_id: id,
        ...(inst.profile !== undefined ? { gpu_instance_profile: inst.profile } : {}),
        ...(share !== undefined ? { compute_share: share } : {}),
        ...(gr !== undefined && gr >= 0 && gr <= 1 ? { gr_engine_active: gr } : {}),
        ...(fb !== undefined && fb >= 0 ? { fb_used_bytes: mibToBytes(fb) } : {}),
        ...resolveSharedWorkloads(inst.labels, inst.pods),
      };
    });
}

/** True when `value` fits the contract's range of its metric (a boolean for `boolean` metrics). */
function isMetricValue(range: DirectField['range'], value: number | boolean): boolean {
  return range === 'boolean' ? typeof value === 'boolean' : isInRange(METRIC_RANGES[range], value);
}

/** A range as an error message shows it: `0..1`, `>= 0, integer`. */
function describeRange(range: DirectField['range']): string {
  if (range === 'boolean') return 'a boolean';
  const r: { min: number; max?: number; integer?: boolean } = METRIC_RANGES[range];
  return `${r.max === undefined ? `>= ${r.min}` : `${r.min}..${r.max}`}${r.integer ? ', integer' : ''}`;
}

function toIdentity(index: number, labels: Record<string, string>): GpuIdentity {
  const uuid = labels.UUID !== undefined && GPU_UUID_RULE.pattern.test(labels.UUID) ? labels.UUID : undefined;
  const name =
    labels.modelName !== undefined && labels.modelName.length <= MAX_GPU_NAME_CHARS
      ? labels.modelName
      : undefined;
  const pci = labels.pci_bus_id !== undefined ? normalizePciBusId(labels.pci_bus_id) : undefined;
  return {
    index,
    ...(uuid ? { uuid } : {}),
    ...(name ? { name } : {}),
    ...(pci ? { pci_bus_id: pci } : {}),
  };
}

/** Options of {@link scrapeDcgmExporter}. */
export interface ScrapeDcgmExporterOptions {
  /** The fetch to use (tests inject one). @default {@link nodeFetch} (node:http, not undici: less RSS) */
  readonly fetch?: typeof fetch;
  /** Give up after this many milliseconds, 1..60000. @default 2000 */
  readonly timeoutMs?: number;
}

/**
 * Scrapes a dcgm-exporter endpoint and parses the answer.
 *
 * @param url - the metrics URL, e.g. `http://127.0.0.1:9400/metrics`
 * @param opts - `fetch`, `timeoutMs`
 * @returns the parse of the body, as {@link parseDcgmExporterText}
 * @throws {DcgmScrapeError} when the endpoint cannot be reached, times out or answers non-2xx
 */
export async function scrapeDcgmExporter(
  url: string,
  opts: ScrapeDcgmExporterOptions = {},
): Promise<DcgmExporterParse> {
  const doFetch = opts.fetch ?? nodeFetch;
  const timeoutMs = opts.timeoutMs ?? 2000;
  let response: Response;
  let body: string;
  try {
    response = await doFetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: 'text/plain' },
    });
    body = await response.text();
  } catch (cause) {
    throw new DcgmScrapeError(url, `no answer within ${timeoutMs} ms (${String(cause)})`, { cause });
  }
  if (!response.ok)
    throw new DcgmScrapeError(url, `expected HTTP 200, got ${response.status}`, { status: response.status });
  return parseDcgmExporterText(body);
}
