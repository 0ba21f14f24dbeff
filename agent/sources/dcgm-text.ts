/**
 * The Prometheus text exposition (format 0.0.4) as dcgm-exporter prints it, one sample line at a
 * time: metric name, labels with `\"` `\\` `\n` escapes, a value (`NaN`, `±Inf` included) and an
 * optional integer timestamp (ms), which is read and dropped. Pure: no I/O.
 */

/**
 * The metric names of dcgm-exporter 1.x (the `dcgmi dmon` script of NVIDIA/gpu-monitoring-tools and
 * its `pod-gpu-metrics-exporter`, 2019–2020: `dcgm_<name>`), by the DCGM field each one printed (the
 * field ids are in that script's comments). Its `dcgm_fi_prof_*` names need no entry: upper-cased they
 * are the field names. Fields this reader does not use are left out (they stay ignored).
 */
const DCGM_1X_NAMES: Readonly<Record<string, string>> = {
  dcgm_sm_clock: 'DCGM_FI_DEV_SM_CLOCK',
  dcgm_memory_clock: 'DCGM_FI_DEV_MEM_CLOCK',
  dcgm_memory_temp: 'DCGM_FI_DEV_MEMORY_TEMP',
  dcgm_gpu_temp: 'DCGM_FI_DEV_GPU_TEMP',
  dcgm_power_usage: 'DCGM_FI_DEV_POWER_USAGE',
  dcgm_pcie_replay_counter: 'DCGM_FI_DEV_PCIE_REPLAY_COUNTER',
  dcgm_gpu_utilization: 'DCGM_FI_DEV_GPU_UTIL',
  dcgm_mem_copy_utilization: 'DCGM_FI_DEV_MEM_COPY_UTIL',
  dcgm_power_violation: 'DCGM_FI_DEV_POWER_VIOLATION',
  dcgm_thermal_violation: 'DCGM_FI_DEV_THERMAL_VIOLATION',
  dcgm_fb_free: 'DCGM_FI_DEV_FB_FREE',
  dcgm_fb_used: 'DCGM_FI_DEV_FB_USED',
  dcgm_ecc_sbe_volatile_total: 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
  dcgm_ecc_dbe_volatile_total: 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
  dcgm_ecc_sbe_aggregate_total: 'DCGM_FI_DEV_ECC_SBE_AGG_TOTAL',
  dcgm_ecc_dbe_aggregate_total: 'DCGM_FI_DEV_ECC_DBE_AGG_TOTAL',
  dcgm_retired_pages_pending: 'DCGM_FI_DEV_RETIRED_PENDING',
  dcgm_nvlink_flit_crc_error_count_total: 'DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL',
  dcgm_nvlink_data_crc_error_count_total: 'DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL',
};

/** Label names some dcgm-exporter builds write in lower case, and the name this parser reads them by. */
const LABEL_ALIASES: Readonly<Record<string, string>> = { uuid: 'UUID', hostname: 'Hostname' };

/** One sample line: metric name, labels, value. */
export interface DcgmSample {
  /** The metric name as printed. */
  readonly name: string;
  /** Label name → unescaped value, in the order printed. */
  readonly labels: Record<string, string>;
  /** The sample value; `NaN` and `±Infinity` as printed. */
  readonly value: number;
}

/**
 * Upper-cases a `dcgm_fi_*` metric name, renames a dcgm-exporter 1.x name to its DCGM field
 * (`dcgm_gpu_temp` → `DCGM_FI_DEV_GPU_TEMP`) and lower-case label aliases (`uuid` → `UUID`,
 * `hostname` → `Hostname`), so every dcgm-exporter build is read by the same names.
 *
 * @param sample - one parsed sample line
 * @returns the same sample when nothing changes, else a renamed copy
 */
export function normalizeDcgmSample(sample: DcgmSample): DcgmSample {
  const name =
    DCGM_1X_NAMES[sample.name] ?? (/^dcgm_/i.test(sample.name) ? sample.name.toUpperCase() : sample.name);
  let labels = sample.labels;
  for (const [alias, canonical] of Object.entries(LABEL_ALIASES)) {
    if (labels[alias] !== undefined && labels[canonical] === undefined) {
      const { [alias]: value, ...rest } = labels;
      labels = { ...rest, [canonical]: value as string };
    }
  }
  return name === sample.name && labels === sample.labels ? sample : { name, labels, value: sample.value };
}

const NAME_RE = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL_NAME_RE = /^[a-zA-Z_][a-zA-Z0-9_]*/;

/**
 * Parses one sample line (not a comment, not blank).
 *
 * @param line - the line, trimmed
 * @returns the sample, or a reason string naming what was expected when the line is malformed
 */
export function parseDcgmSampleLine(line: string): DcgmSample | string {
  const nameMatch = NAME_RE.exec(line);
  if (!nameMatch)
    return `expected a metric name at the start of the line, got ${JSON.stringify(line.slice(0, 40))}`;
  const name = nameMatch[0];
  let pos = name.length;
  const labels: Record<string, string> = {};
  if (line[pos] === '{') {
    pos++;
    for (;;) {
      while (line[pos] === ' ' || line[pos] === '\t') pos++;
      if (line[pos] === '}') {
        pos++;
        break;
      }
      const labelMatch = LABEL_NAME_RE.exec(line.slice(pos));
      if (!labelMatch) return `expected a label name or '}' at column ${pos + 1} of ${name}`;
      const label = labelMatch[0];
      pos += label.length;
      while (line[pos] === ' ') pos++;
      if (line[pos] !== '=' || line[pos + 1] !== '"') return `expected ="…" after label ${label} of ${name}`;
      pos += 2;
      let value = '';
      for (;;) {
        const c = line[pos];
        if (c === undefined) return `unterminated value of label ${label} of ${name}`;
        if (c === '"') {
          pos++;
          break;
        }
        if (c === '\\') {
          const next = line[pos + 1];
          if (next === 'n') value += '\n';
          else if (next === '\\' || next === '"') value += next;
          else
            return `unknown escape \\${next ?? ''} in label ${label} of ${name}; expected \\", \\\\ or \\n`;
          pos += 2;
          continue;
        }
        value += c;
        pos++;
      }
      labels[label] = value;
      while (line[pos] === ' ' || line[pos] === '\t') pos++;
      if (line[pos] === ',') pos++;
      else if (line[pos] !== '}') return `expected ',' or '}' after label ${label} of ${name}`;
    }
  }
  const rest = line.slice(pos).trim().split(/\s+/);
  if (rest.length < 1 || rest.length > 2 || rest[0] === '')
    return `expected a value (and an optional timestamp) after ${name}`;
  const value = parseValue(rest[0] ?? '');
  if (value === undefined) return `expected a number for ${name}, got ${JSON.stringify(rest[0])}`;
  if (rest[1] !== undefined && !/^-?\d+$/.test(rest[1]))
    return `expected an integer timestamp (ms) after the value of ${name}, got ${JSON.stringify(rest[1])}`;
  return { name, labels, value };
}

function parseValue(token: string): number | undefined {
  if (token === 'NaN') return Number.NaN;
  if (token === '+Inf' || token === 'Inf') return Number.POSITIVE_INFINITY;
  if (token === '-Inf') return Number.NEGATIVE_INFINITY;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(token)) return undefined;
  return Number(token);
}
