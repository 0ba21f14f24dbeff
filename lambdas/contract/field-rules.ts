/**
 * The wire contract's field rules as plain values (no zod): the patterns, lengths and numeric
 * ranges that both the API's zod schemas (schema.ts) and the host agent's own checks use, so each
 * rule has one home. The agent imports this file (never schema.ts) and so never loads zod;
 * `test/contract/field-rules.test.ts` proves both sides accept and refuse the same inputs.
 */

/** A pattern with the message the API gives when a value does not match it. */
export interface FieldPattern {
  /** Anchored regular expression the whole value must match. */
  readonly pattern: RegExp;
  /** What was expected, for error messages (`expected an EC2 instance id like …`). */
  readonly message: string;
}

/** EC2 instance id: `i-` then 8 or 17 lower-case hex digits. Source: EC2 API reference, `InstanceId`. */
export const INSTANCE_ID_RULE: FieldPattern = {
  pattern: /^i-[0-9a-f]{8}([0-9a-f]{9})?$/,
  message: 'expected an EC2 instance id like i-0abc12345def67890',
};

/** EC2 instance type: `<family>.<size>`, lower case (`p5.48xlarge`). */
export const INSTANCE_TYPE_RULE: FieldPattern = {
  pattern: /^[a-z0-9-]+\.[a-z0-9-]+$/,
  message: 'expected an EC2 instance type like p5.48xlarge',
};

/** AWS region code, commercial, GovCloud and ISO partitions (`us-east-1`, `us-gov-west-1`). */
export const REGION_RULE: FieldPattern = {
  pattern: /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d$/,
  message: 'expected an AWS region like us-east-1',
};

/** Availability zone name: a region code and one letter (`us-east-1a`). */
export const AZ_RULE: FieldPattern = {
  pattern: /^[a-z]{2}(-gov|-iso[a-z]?)?-[a-z]+-\d[a-z]$/,
  message: 'expected an availability zone like us-east-1a',
};

/** AMI id: `ami-` then 8 to 17 lower-case hex digits. */
export const AMI_ID_RULE: FieldPattern = {
  pattern: /^ami-[0-9a-f]{8,17}$/,
  message: 'expected an AMI id like ami-0abc12345def67890',
};

/** Most characters of an Auto Scaling group name (Auto Scaling API, `AutoScalingGroupName` 1..255). */
export const MAX_ASG_NAME_CHARS = 255;
/** Most characters of an EC2 tag key (EC2 tag restrictions: 128 Unicode characters). */
export const MAX_TAG_KEY_CHARS = 128;
/** Most characters of an EC2 tag value (EC2 tag restrictions: 256 Unicode characters). */
export const MAX_TAG_VALUE_CHARS = 256;

/** A Kubernetes DNS label (RFC 1123): lowercase alphanumerics and `-`, 1..63 characters (namespace, container). */
export const K8S_LABEL_RULE: FieldPattern = {
  pattern: /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/,
  message: 'expected a Kubernetes DNS label (RFC 1123, 1..63 chars)',
};

/** A Kubernetes pod name (RFC 1123 subdomain): lowercase alphanumerics, `-` and `.`, ≤ {@link MAX_K8S_POD_CHARS}. */
export const K8S_POD_RULE: FieldPattern = {
  pattern: /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/,
  message: 'expected a Kubernetes pod name (RFC 1123 subdomain)',
};

/** Most characters of a pod name (Kubernetes object names are DNS subdomains, ≤ 253). */
export const MAX_K8S_POD_CHARS = 253;

/**
 * A Kubernetes pod UID as the kubelet names the pod's cgroup (`…pod<uid>`): an RFC 4122 UUID in
 * lowercase (the API server's `metadata.uid`), or 32 lowercase hex digits (a static pod's UID, the
 * hash of its manifest). The agent writes it with dashes, as `kubectl get pod -o
 * jsonpath='{.metadata.uid}'` prints it, also when the cgroup spells them `_` (systemd driver).
 */
export const K8S_POD_UID_RULE: FieldPattern = {
  pattern: /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/,
  message: 'expected a Kubernetes pod UID (a lowercase UUID, or 32 hex digits for a static pod)',
};

/**
 * A systemd unit that holds a process, a service or a scope (`systemd-udevd.service`,
 * `session-1.scope`, `docker-<id>.scope`): unit-name characters (`[A-Za-z0-9:_.\\@-]`, systemd.unit(5)),
 * ≤ {@link MAX_SYSTEMD_UNIT_CHARS}, ending in `.service` or `.scope`.
 */
export const SYSTEMD_UNIT_RULE: FieldPattern = {
  pattern: /^[A-Za-z0-9:_.\\@-]+\.(service|scope)$/,
  message: 'expected a systemd unit name ending in .service or .scope',
};

/** Most characters of a systemd unit name (systemd's UNIT_NAME_MAX: 256). */
export const MAX_SYSTEMD_UNIT_CHARS = 256;

/** Largest Slurm job id: a 32-bit unsigned integer (`slurm.h` `uint32_t job_id`; ids ≥ 0xfffffffe are reserved). */
export const MAX_SLURM_JOB_ID = 0xfffffffd;

/** NVML UUID of a GPU or MIG instance (`nvmlDeviceGetUUID`: `GPU-c4529c8d-…`, `MIG-…`). */
export const GPU_UUID_RULE: FieldPattern = {
  pattern: /^(GPU|MIG)-[0-9A-Za-z-]+$/,
  message: 'expected an NVML UUID like GPU-c4529c8d-…',
};

/** Most characters of a GPU product name (`nvmlDeviceGetName` writes at most 96 bytes). */
export const MAX_GPU_NAME_CHARS = 96;

/** A closed numeric range; `integer` asks for a safe integer. Values must be finite. */
export interface NumberRange {
  /** Smallest allowed value, inclusive. */
  readonly min: number;
  /** Largest allowed value, inclusive; absent: no upper bound. */
  readonly max?: number;
  /** Only safe integers (`Number.isSafeInteger`). */
  readonly integer?: boolean;
}

/** The value kinds of the GPU metrics and their ranges (the schema builds its number schemas from these). */
export const METRIC_RANGES = {
  /** A 0..1 fraction (NVML utilization / 100, DCGM `*_RATIO` fields, GPM metric / 100). */
  ratio: { min: 0, max: 1 },
  /** A non-negative integer count or byte total (safe integer). */
  count: { min: 0, integer: true },
  /** A non-negative finite rate or quantity. */
  nonNegative: { min: 0 },
  /** A temperature, °C. Sensors read −40..150 at the extremes. */
  celsius: { min: -40, max: 150 },
  /** A power, W. The largest board power in NVIDIA's lineup is ~1.2 kW; 5 kW leaves room. */
  watts: { min: 0, max: 5000 },
  /** A clock, MHz. */
  mhz: { min: 0, max: 10_000 },
} as const satisfies Record<string, NumberRange>;

/** Union of the keys of {@link METRIC_RANGES}. */
export type MetricRangeKind = keyof typeof METRIC_RANGES;

/**
 * True when `value` is a finite number inside `range` (a safe integer where the range asks for one),
 * as the contract's zod number schema built from the same range decides.
 *
 * @param range - one of {@link METRIC_RANGES}, or any {@link NumberRange}
 * @param value - the value to check; non-numbers are refused
 */
export function isInRange(range: NumberRange, value: unknown): value is number {
  if (typeof value !== 'number' || !Number.isFinite(value)) return false;
  if (range.integer === true && !Number.isSafeInteger(value)) return false;
  return value >= range.min && (range.max === undefined || value <= range.max);
}

/**
 * Every field of a GPU window's `metrics`, in the order of `GPU_METRIC_RULES` (the order the agent
 * writes them; a test holds it equal to the schema's keys).
 */
export const GPU_METRIC_NAMES = [
  'gpu_util',
  'mem_copy_util',
  'sm_active',
  'min_sm_active',
  'max_sm_active',
  'sm_active_cv',
  'sm_occupancy',
  'tensor_active',
  'dram_active',
  'fp16_active',
  'fp32_active',
  'fp64_active',
  'pcie_tx_bytes_per_s',
  'pcie_rx_bytes_per_s',
  'max_pcie_rx_bytes_per_s',
  'nvlink_tx_bytes_per_s',
  'nvlink_rx_bytes_per_s',
  'fb_used_bytes',
  'fb_used_growth_bytes_per_s',
  'fb_total_bytes',
  'gpu_temp_c',
  'max_gpu_temp_c',
  'mem_temp_c',
  'power_w',
  'max_power_w',
  'min_power_w',
  'power_cv',
  'power_limit_w',
  'energy_j',
  'sm_clock_mhz',
  'mem_clock_mhz',
  'clocks_event_reasons',
  'thermal_throttle_ratio',
  'power_throttle_ratio',
  'ecc_sbe_volatile',
  'ecc_sbe_volatile_delta',
  'ecc_dbe_volatile',
  'ecc_sbe_aggregate',
  'ecc_dbe_aggregate',
  'retired_pages_pending',
  'remapped_rows_pending',
  'remapped_rows_failure',
  'pcie_replay_count',
  'pcie_replay_delta',
  'nvlink_crc_errors',
  'nvlink_crc_errors_delta',
  'compute_processes',
] as const;

/** Union of {@link GPU_METRIC_NAMES}. */
export type GpuMetricName = (typeof GPU_METRIC_NAMES)[number];
