import * as z from 'zod';
import {
  EVENT_KINDS,
  EVENT_SOURCES,
  MAX_COMPUTE_PROCESSES,
  MAX_DETAIL_CHARS,
  MAX_EFA_PORTS_PER_BATCH,
  MAX_EVENTS_PER_BATCH,
  MAX_TAGS,
  MAX_WINDOWS_PER_BATCH,
  PROFILING_SOURCES,
  SCHEMA_V1,
} from './constants';
import { fastStrictObject } from './fast-strict-object';
import {
  AMI_ID_RULE,
  AZ_RULE,
  type FieldPattern,
  GPU_UUID_RULE,
  INSTANCE_ID_RULE,
  INSTANCE_TYPE_RULE,
  K8S_LABEL_RULE,
  K8S_POD_RULE,
  K8S_POD_UID_RULE,
  MAX_ASG_NAME_CHARS,
  MAX_GPU_NAME_CHARS,
  MAX_K8S_POD_CHARS,
  MAX_SLURM_JOB_ID,
  MAX_SYSTEMD_UNIT_CHARS,
  MAX_TAG_KEY_CHARS,
  MAX_TAG_VALUE_CHARS,
  METRIC_RANGES,
  type NumberRange,
  REGION_RULE,
  SYSTEMD_UNIT_RULE,
} from './field-rules';
import { MAX_GPU_INSTANCE_ID, MIG_PROFILE_RULE } from './mig';
import { epochMs } from './timestamps';

/**
 * The wire contract v1 as zod schemas. Every wire and domain type derives from these
 * (`z.infer`), never written twice. Objects are strict: an unknown field is an error naming it,
 * so a typo is refused instead of silently dropped. Time-window checks that need the server's
 * clock live in `parseBatch` (parse-batch.ts), not here.
 */

/** A number schema of one contract range (field-rules.ts), the same rule the agent checks with `isInRange`. */
function inRange(range: NumberRange): z.ZodNumber {
  const base = range.integer === true ? z.int().min(range.min) : z.number().min(range.min);
  return range.max === undefined ? base : base.max(range.max);
}
/** A string schema of one contract pattern (field-rules.ts), with its message. */
function matching(rule: FieldPattern): z.ZodString {
  return z.string().regex(rule.pattern, rule.message);
}

/** A 0..1 fraction (NVML utilization / 100, DCGM `*_RATIO` fields, GPM metric / 100). */
const ratio = inRange(METRIC_RANGES.ratio);
/** A non-negative integer count or byte total (safe integer). */
const count = inRange(METRIC_RANGES.count);
/** A non-negative finite rate or quantity. */
const nonNegative = inRange(METRIC_RANGES.nonNegative);
/** A temperature, °C. Sensors read −40..150 at the extremes. */
const celsius = inRange(METRIC_RANGES.celsius);
/** A power, W. The largest board power in NVIDIA's lineup is ~1.2 kW; 5 kW leaves room. */
const watts = inRange(METRIC_RANGES.watts);
/** A clock, MHz. */
const mhz = inRange(METRIC_RANGES.mhz);
/** RFC 3339 timestamp with offset, e.g. `2026-11-21T10:00:10Z`. */
const timestamp = z.iso.datetime({ offset: true });

/** EC2 instance id: `i-` then 8 or 17 hex digits. */
export const InstanceIdSchema = matching(INSTANCE_ID_RULE);

/** EC2 instance identity and placement, from IMDSv2 (or a local override). */
export const HostSchema = z.strictObject({
  instance_id: InstanceIdSchema,
  instance_type: matching(INSTANCE_TYPE_RULE),
  region: matching(REGION_RULE),
  az: matching(AZ_RULE).optional(),
  lifecycle: z.enum(['on-demand', 'spot']).optional(),
  asg_name: z.string().min(1).max(MAX_ASG_NAME_CHARS).optional(),
  ami_id: matching(AMI_ID_RULE).optional(),
  tags: z
    .record(z.string().min(1).max(MAX_TAG_KEY_CHARS), z.string().max(MAX_TAG_VALUE_CHARS))
    .refine((t) => Object.keys(t).length <= MAX_TAGS, `expected at most ${MAX_TAGS} tags`)
    .optional(),
});

/** Agent self-description and its own loss counters. */
export const AgentInfoSchema = z.strictObject({
  version: z.string().min(1).max(64),
  driver_version: z.string().max(64).optional(),
  nvml_version: z.string().max(64).optional(),
  cuda_version: z.string().max(64).optional(),
  profiling_source: z.enum(PROFILING_SOURCES),
  stats: z
    .strictObject({
      samples: count.optional(),
      spooled: count.optional(),
      dropped: count.optional(),
      nvml_errors: count.optional(),
    })
    .optional(),
});

/** GPU identity, from NVML (`nvmlDeviceGetIndex/UUID/Name/PciInfo_v3/Serial`) or dcgm-exporter labels. */
export const GpuIdentitySchema = z.strictObject({
  index: z.int().min(0).max(63),
  uuid: matching(GPU_UUID_RULE).optional(),
  name: z.string().max(MAX_GPU_NAME_CHARS).optional(),
  pci_bus_id: z
    .string()
    .regex(/^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$/)
    .optional(),
  serial: z.string().max(64).optional(),
});

/**
 * Each GPU metric's rule: per-GPU aggregates over a window. Averages unless the name says
 * `max_`/`min_`; counters are the value at the window end (volatile = since driver load, aggregate =
 * lifetime of the board). Every field is optional: a metric the hardware or driver cannot give is
 * **absent**, never faked (`sm_active` is never filled from `gpu_util`). {@link GpuMetricsSchema}
 * is the object of these rules.
 */
export const GPU_METRIC_RULES = {
  /** NVML `nvmlDeviceGetUtilizationRates().gpu` / 100; DCGM 203 `DCGM_FI_DEV_GPU_UTIL`. Time any kernel ran. */
  gpu_util: ratio.optional(),
  /** NVML `nvmlDeviceGetUtilizationRates().memory` / 100; DCGM 204 `DCGM_FI_DEV_MEM_COPY_UTIL`. */
  mem_copy_util: ratio.optional(),
  /** GPM `SM_UTIL` / 100 or DCGM 1002 `DCGM_FI_PROF_SM_ACTIVE`: SM cycles with ≥ 1 warp resident. */
  sm_active: ratio.optional(),
  /** Lowest `sm_active` of the samples in the window (horizon windows; spread for the sawtooth and input-bound rules). */
  min_sm_active: ratio.optional(),
  /** Highest `sm_active` of the samples in the window. */
  max_sm_active: ratio.optional(),
  /** Coefficient of variation of the `sm_active` samples (population stddev / mean), ≥ 0. */
  sm_active_cv: z.number().min(0).max(100).optional(),
  /** GPM `SM_OCCUPANCY` / 100 or DCGM 1003 `DCGM_FI_PROF_SM_OCCUPANCY`. */
  sm_occupancy: ratio.optional(),
  /** GPM `ANY_TENSOR_UTIL` / 100 or DCGM 1004 `DCGM_FI_PROF_PIPE_TENSOR_ACTIVE`. */
  tensor_active: ratio.optional(),
  /** GPM `DRAM_BW_UTIL` / 100 or DCGM 1005 `DCGM_FI_PROF_DRAM_ACTIVE`. */
  dram_active: ratio.optional(),
  /** GPM `FP16_UTIL` / 100 or DCGM 1008. */
  fp16_active: ratio.optional(),
  /** GPM `FP32_UTIL` / 100 or DCGM 1007. */
  fp32_active: ratio.optional(),
  /** GPM `FP64_UTIL` / 100 or DCGM 1006. */
  fp64_active: ratio.optional(),
  /** PCIe transmit rate, bytes/s (NVML field 197 deltas, GPM 20 × 2^20, or DCGM 1009). */
  pcie_tx_bytes_per_s: nonNegative.optional(),
  /** PCIe receive rate, bytes/s (NVML field 198 deltas, GPM 21 × 2^20, or DCGM 1010). */
  pcie_rx_bytes_per_s: nonNegative.optional(),
  /** Highest PCIe receive rate of the samples in the window, bytes/s (input-bound bursts). */
  max_pcie_rx_bytes_per_s: nonNegative.optional(),
  /** NVLink transmit rate over all links, bytes/s (NVML field 138 deltas or DCGM 1011). */
  nvlink_tx_bytes_per_s: nonNegative.optional(),
  /** NVLink receive rate over all links, bytes/s (NVML field 139 deltas or DCGM 1012). */
  nvlink_rx_bytes_per_s: nonNegative.optional(),
  /** Framebuffer memory used, bytes (`nvmlDeviceGetMemoryInfo_v2().used`; DCGM 252 MiB × 2^20). */
  fb_used_bytes: count.optional(),
  /** Least-squares slope of `fb_used_bytes` over the window, bytes/s (negative when memory is freed); a steady positive slope over a horizon suggests a leak. */
  fb_used_growth_bytes_per_s: z.number().min(-1e12).max(1e12).optional(),
  /** Framebuffer memory total, bytes (`nvmlDeviceGetMemoryInfo_v2().total`). */
  fb_total_bytes: count.optional(),
  /** GPU core temperature, °C, average (`nvmlDeviceGetTemperature(GPU)`; DCGM 150). */
  gpu_temp_c: celsius.optional(),
  /** GPU core temperature, °C, maximum seen in the window. */
  max_gpu_temp_c: celsius.optional(),
  /** HBM temperature, °C (NVML field 82; DCGM 140). */
  mem_temp_c: celsius.optional(),
  /** Board power, W, average (energy delta / Δt where the energy counter exists, else `nvmlDeviceGetPowerUsage` mean; DCGM 155). */
  power_w: watts.optional(),
  /** Board power, W, maximum sample in the window. */
  max_power_w: watts.optional(),
  /** Board power, W, minimum sample in the window. */
  min_power_w: watts.optional(),
  /** Coefficient of variation of the power samples (stddev / mean), ≥ 0. */
  power_cv: z.number().min(0).max(100).optional(),
  /** Enforced power limit, W (`nvmlDeviceGetEnforcedPowerLimit`). */
  power_limit_w: watts.optional(),
  /** Energy used in the window, J (delta of `nvmlDeviceGetTotalEnergyConsumption`, mJ / 1000). */
  energy_j: nonNegative.optional(),
  /** SM clock, MHz (`nvmlDeviceGetClockInfo(SM)`; DCGM 100). */
  sm_clock_mhz: mhz.optional(),
  /** Memory clock, MHz (`nvmlDeviceGetClockInfo(MEM)`; DCGM 101). */
  mem_clock_mhz: mhz.optional(),
  /** OR of the clocks-event (throttle) reason bitmasks seen in the window (`nvmlDeviceGetCurrentClocksEventReasons`; DCGM 112). */
  clocks_event_reasons: count.optional(),
  /** Fraction of samples, 0..1, whose clocks-event reasons had a thermal slowdown bit (SW 0x20, HW 0x40) or HW slowdown (0x8). */
  thermal_throttle_ratio: ratio.optional(),
  /**
   * Share of the window, 0..1, in which the clocks were held down by the power cap. Measured, in this
   * order: Δ cumulative power-violation time / Δ wall time between the first and last samples having the
   * counter (`nvmlDeviceGetViolationStatus(NVML_PERF_POLICY_POWER)` ns: the SW power cap), or the share of
   * samples with the HW power brake (0x80) if larger; without the counter the fraction of samples whose
   * clocks-event reasons had SW power cap (0x4) or HW power brake (0x80). Absent when the GPU reports
   * neither (NVML NOT_SUPPORTED): never invented. Additive, contract v1.
   */
  power_throttle_ratio: ratio.optional(),
  /** Volatile corrected (single-bit) ECC errors since driver load (`nvmlDeviceGetTotalEccErrors(CORRECTED, VOLATILE)`; DCGM 310). */
  ecc_sbe_volatile: count.optional(),
  /**
   * Growth of `ecc_sbe_volatile` over the window (last − first sample), ≥ 0; absent with < 2 samples or when
   * the counter went backwards in the window (a driver reload resets it: a reset is never growth).
   */
  ecc_sbe_volatile_delta: count.optional(),
  /** Volatile uncorrected (double-bit) ECC errors since driver load (DCGM 311). */
  ecc_dbe_volatile: count.optional(),
  /** Aggregate corrected ECC errors over the board's life (DCGM 312). */
  ecc_sbe_aggregate: count.optional(),
  /** Aggregate uncorrected ECC errors over the board's life (DCGM 313). */
  ecc_dbe_aggregate: count.optional(),
  /** Retired pages waiting for a reboot (`nvmlDeviceGetRetiredPagesPendingStatus`; pre-Ampere). */
  retired_pages_pending: z.boolean().optional(),
  /** A row remap is staged until the next GPU reset (`nvmlDeviceGetRemappedRows().isPending`; field 144). */
  remapped_rows_pending: z.boolean().optional(),
  /** A row remap failed at some point (`nvmlDeviceGetRemappedRows().failureOccurred`; field 145): RMA candidate. */
  remapped_rows_failure: z.boolean().optional(),
  /** PCIe replay counter (`nvmlDeviceGetPcieReplayCounter`; DCGM 202). */
  pcie_replay_count: count.optional(),
  /** Growth of `pcie_replay_count` over the window (last − first sample), ≥ 0; absent with < 2 samples or after a counter reset. */
  pcie_replay_delta: count.optional(),
  /** NVLink CRC errors summed over links (NVML field 38 + 45; DCGM 409). */
  nvlink_crc_errors: count.optional(),
  /** Growth of `nvlink_crc_errors` over the window (last − first sample), ≥ 0; absent with < 2 samples or after a counter reset. */
  nvlink_crc_errors_delta: count.optional(),
  /** Running compute processes (`nvmlDeviceGetComputeRunningProcesses_v3` count). Absent when the source cannot tell. */
  compute_processes: z.int().min(0).max(MAX_COMPUTE_PROCESSES).optional(),
} as const;

/**
 * Per-GPU aggregates over a window: a strict object of {@link GPU_METRIC_RULES}, and
 * `fb_used_bytes ≤ fb_total_bytes`, `min_power_w ≤ max_power_w`. A valid object is accepted by one
 * loop over its fields ({@link fastStrictObject}); anything else gets the issues zod's strict object
 * of the same rules gives.
 */
export const GpuMetricsSchema = fastStrictObject(GPU_METRIC_RULES, (m, ctx) => {
  if (m.fb_used_bytes !== undefined && m.fb_total_bytes !== undefined && m.fb_used_bytes > m.fb_total_bytes) {
    ctx.addIssue({
      code: 'custom',
      path: ['fb_used_bytes'],
      message: 'expected fb_used_bytes <= fb_total_bytes',
    });
  }
  if (m.min_power_w !== undefined && m.max_power_w !== undefined && m.min_power_w > m.max_power_w) {
    ctx.addIssue({ code: 'custom', path: ['min_power_w'], message: 'expected min_power_w <= max_power_w' });
  }
});

/** A compute process seen on a GPU in the window (`nvmlDeviceGetComputeRunningProcesses_v3`), for attribution. */
export const GpuProcessSchema = z.strictObject({
  pid: z
    .int()
    .min(0)
    .max(2 ** 32 - 1),
  /** GPU memory the process holds, bytes; absent when NVML reports it unavailable. */
  fb_used_bytes: count.optional(),
  /**
   * The Kubernetes pod the process runs in: its UID, from the process's cgroup (`/proc/<pid>/cgroup`,
   * `kubepods…pod<uid>`); absent off Kubernetes or when the agent cannot read the process's cgroup.
   */
  k8s_pod_uid: matching(K8S_POD_UID_RULE).optional(),
  /** The Slurm job the process runs in, from its cgroup (`job_<id>`, Slurm's task/cgroup plugin); absent otherwise. */
  slurm_job_id: z.int().min(1).max(MAX_SLURM_JOB_ID).optional(),
  /**
   * The systemd service or scope the process runs in (`train.service`, `session-3.scope`), from its
   * cgroup, when it is in neither a pod nor a Slurm job; absent otherwise.
   */
  systemd_unit: matching(SYSTEMD_UNIT_RULE).max(MAX_SYSTEMD_UNIT_CHARS).optional(),
});

/** A Kubernetes DNS label (RFC 1123): lowercase alphanumerics and `-`, 1..63 characters. */
const k8sLabel = matching(K8S_LABEL_RULE);

/**
 * The Kubernetes workload that holds a GPU, as dcgm-exporter's pod-resources mapping labels it
 * (`namespace`, `pod`, `container` labels of `DCGM_FI_*` series when run with
 * `--kubernetes`). Absent when the host is not a Kubernetes node or the GPU is not allocated to a pod.
 */
export const K8sWorkloadSchema = z.strictObject({
  /** Kubernetes namespace (a DNS label, ≤ 63 chars). */
  namespace: k8sLabel,
  /** Pod name (a DNS subdomain, ≤ 253 chars). */
  pod: matching(K8S_POD_RULE).max(MAX_K8S_POD_CHARS),
  /** Container name within the pod (a DNS label), when the exporter gives it. */
  container: k8sLabel.optional(),
});

/** One GPU's aggregates over a flush window (stored) or the trailing horizon (rules only). */
export const GpuWindowSchema = z
  .strictObject({
    kind: z.enum(['flush', 'horizon']),
    start: timestamp,
    end: timestamp,
    gpu: GpuIdentitySchema,
    metrics: GpuMetricsSchema,
    /** Compute processes seen in the window (at most 64, largest memory first); absent when unknown. */
    processes: z.array(GpuProcessSchema).max(64).optional(),
    /** The pod holding the GPU at the window's end (dcgm-exporter labels); absent off Kubernetes. */
    k8s: K8sWorkloadSchema.optional(),
    /**
     * The MIG GPU instance (slice) this window measures, `GPU_I_ID` / NVML GPU instance id, 0..
     * {@link MAX_GPU_INSTANCE_ID}; absent for a whole GPU. Given with `gpu_instance_profile`; a GPU
     * then has one window per instance (per kind and start) and none for itself.
     */
    gpu_instance_id: z.int().min(0).max(MAX_GPU_INSTANCE_ID).optional(),
    /** The instance's profile (`GPU_I_PROFILE`: `1g.10gb`, `3g.40gb`), with `gpu_instance_id`; its `<n>g` prices the slice. */
    gpu_instance_profile: matching(MIG_PROFILE_RULE).optional(),
  })
  .superRefine((w, ctx) => {
    if (epochMs(w.end) <= epochMs(w.start)) {
      ctx.addIssue({ code: 'custom', path: ['end'], message: 'expected end after start' });
    }
    if (w.gpu_instance_id !== undefined && w.gpu_instance_profile === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['gpu_instance_profile'],
        message: 'expected gpu_instance_profile with gpu_instance_id',
      });
    } else if (w.gpu_instance_profile !== undefined && w.gpu_instance_id === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['gpu_instance_id'],
        message: 'expected gpu_instance_id with gpu_instance_profile',
      });
    }
  });

/** Deltas of one EFA device/port's cumulative sysfs `hw_counters` over a window (port 0 = device counters). */
export const EfaWindowSchema = z
  .strictObject({
    start: timestamp,
    end: timestamp,
    device: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, 'expected an RDMA device name like rdmap16s27'),
    port: z.int().min(0).max(255),
    deltas: z
      .record(z.string().regex(/^[a-z][a-z0-9_]{0,63}$/, 'expected a snake_case counter name'), count)
      .refine((d) => Object.keys(d).length <= 128, 'expected at most 128 counters'),
  })
  .superRefine((w, ctx) => {
    if (Date.parse(w.end) <= Date.parse(w.start)) {
      ctx.addIssue({ code: 'custom', path: ['end'], message: 'expected end after start' });
    }
  });

/** A discrete occurrence: an XID, a lost GPU, a DBE, a spot notice, agent lifecycle, data loss. */
export const EventSchema = z
  .strictObject({
    at: timestamp,
    kind: z.enum(EVENT_KINDS),
    gpu_index: z.int().min(0).max(63).optional(),
    pci_bus_id: z
      .string()
      .regex(/^[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(\.[0-9A-Fa-f])?$/)
      .optional(),
    /** NVIDIA Xid code, for `kind: "xid"` (999 = NVML's "unknown XID"). */
    xid: z.int().min(1).max(999).optional(),
    source: z.enum(EVENT_SOURCES),
    /** Process id the driver attributed the event to, if any. */
    pid: z.int().min(0).optional(),
    /** Process name the driver attributed the event to, if any. */
    process_name: z.string().max(256).optional(),
    /** Windows lost, for `kind: "data_dropped"`. */
    count: count.optional(),
    detail: z.string().max(MAX_DETAIL_CHARS).optional(),
  })
  .superRefine((e, ctx) => {
    if (e.kind === 'xid' && e.xid === undefined) {
      ctx.addIssue({ code: 'custom', path: ['xid'], message: 'expected xid for an event of kind "xid"' });
    }
  });

/** One batch: one instance, one flush window (plus horizons and any events since the last batch). */
export const BatchSchema = z.strictObject({
  schema: z.literal(SCHEMA_V1, { error: `expected "${SCHEMA_V1}"` }),
  batch_id: z.uuid(),
  seq: z.int().min(0),
  sent_at: timestamp,
  host: HostSchema,
  agent: AgentInfoSchema,
  windows: z.array(GpuWindowSchema).max(MAX_WINDOWS_PER_BATCH),
  efa: z.array(EfaWindowSchema).max(MAX_EFA_PORTS_PER_BATCH).optional(),
  events: z.array(EventSchema).max(MAX_EVENTS_PER_BATCH).optional(),
});

/** A validated batch (wire contract v1). */
export type Batch = z.infer<typeof BatchSchema>;
/** EC2 identity of the sender. */
export type Host = z.infer<typeof HostSchema>;
/** The agent's self-description. */
export type AgentInfo = z.infer<typeof AgentInfoSchema>;
/** One GPU window (flush or horizon). */
export type GpuWindow = z.infer<typeof GpuWindowSchema>;
/** GPU identity fields. */
export type GpuIdentity = z.infer<typeof GpuIdentitySchema>;
/** The Kubernetes workload holding a GPU. */
export type K8sWorkload = z.infer<typeof K8sWorkloadSchema>;
/** A compute process on a GPU. */
export type GpuProcess = z.infer<typeof GpuProcessSchema>;
/** Per-GPU metrics; each field absent when unsupported. */
export type GpuMetrics = z.infer<typeof GpuMetricsSchema>;
/** One EFA device/port's counter deltas. */
export type EfaWindow = z.infer<typeof EfaWindowSchema>;
/** One event. */
export type GpuEvent = z.infer<typeof EventSchema>;
/** Event kind union. */
export type EventKind = (typeof EVENT_KINDS)[number];
/** Profiling source union. */
export type ProfilingSource = (typeof PROFILING_SOURCES)[number];
