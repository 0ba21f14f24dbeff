import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Folder of the captures this project took on real GPUs (`test/fixtures/captured/README.md`). */
export const CAPTURED_ROOT = join(__dirname, '..', 'fixtures', 'captured');

/** One body the agent sent, as the loopback stub kept it (`batches.jsonl`, one per line). */
export interface CapturedBody {
  /** When the stub received it, epoch ms: the ingest clock to validate it at. */
  readonly receivedMs: number;
  /** The request's `Content-Encoding` (`gzip`); the body is stored decompressed. */
  readonly contentEncoding: string;
  /** The batch exactly as sent (raw JSON, not yet validated). */
  readonly batch: unknown;
}

/** One load phase of the capture script (`phases.jsonl`), epoch ms. */
export interface CapturedPhase {
  /** `idle`, `tensor`, `dram`, `tiny` or `held` (see the capture's README). */
  readonly phase: string;
  readonly startMs: number;
  readonly endMs: number;
  readonly detail: string;
}

/**
 * One row of `nvidia-smi --query-gpu=… --format=csv,nounits -lms 500` (`smi.csv`), in
 * nvidia-smi's own units: percent, MiB, W, °C, MHz.
 */
export interface SmiSample {
  /** The row's timestamp (nvidia-smi prints local time; the capture ran in UTC), epoch ms. */
  readonly atMs: number;
  readonly index: number;
  readonly uuid: string;
  /** `utilization.gpu [%]`, 0..100: NVML's `nvmlDeviceGetUtilizationRates().gpu`. */
  readonly utilGpuPct: number;
  /** `utilization.memory [%]`, 0..100: `nvmlDeviceGetUtilizationRates().memory`. */
  readonly utilMemoryPct: number;
  /** `memory.used [MiB]`, rounded to a whole MiB by nvidia-smi. */
  readonly memoryUsedMiB: number;
  /** `memory.total [MiB]`. */
  readonly memoryTotalMiB: number;
  /** `power.draw [W]`. */
  readonly powerDrawW: number;
  /** `power.limit [W]`. */
  readonly powerLimitW: number;
  /** `temperature.gpu`, °C. */
  readonly temperatureC: number;
  /** `clocks.current.sm [MHz]`. */
  readonly smClockMhz: number;
  /** `clocks.current.memory [MHz]`. */
  readonly memoryClockMhz: number;
}

/** Everything one capture folder holds that the tests read. */
export interface Capture {
  /** Folder name, `<gpu>-driver-<version>`. */
  readonly name: string;
  readonly bodies: readonly CapturedBody[];
  /** `once.json`: the batch of `agent --once --print` (raw JSON). */
  readonly once: unknown;
  readonly phases: readonly CapturedPhase[];
  readonly smi: readonly SmiSample[];
}

/** nvidia-smi's CSV header → the {@link SmiSample} field it fills (numbers unless `uuid`). */
const SMI_COLUMNS = {
  index: 'index',
  uuid: 'uuid',
  utilGpuPct: 'utilization.gpu [%]',
  utilMemoryPct: 'utilization.memory [%]',
  memoryUsedMiB: 'memory.used [MiB]',
  memoryTotalMiB: 'memory.total [MiB]',
  powerDrawW: 'power.draw [W]',
  powerLimitW: 'power.limit [W]',
  temperatureC: 'temperature.gpu',
  smClockMhz: 'clocks.current.sm [MHz]',
  memoryClockMhz: 'clocks.current.memory [MHz]',
} as const;

/**
 * The capture folders under {@link CAPTURED_ROOT} (those holding a `batches.jsonl`), sorted.
 *
 * @returns folder names, e.g. `['h200-driver-580.159.04']`
 */
export function listCaptures(): string[] {
  return readdirSync(CAPTURED_ROOT, { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(CAPTURED_ROOT, d.name, 'batches.jsonl')))
    .map((d) => d.name)
    .sort();
}

/**
 * Reads one capture folder.
 *
 * @param name - a folder of {@link listCaptures}
 * @returns its bodies, `once.json`, phases and nvidia-smi samples
 * @throws {Error} when a file is missing, a line is not JSON, or `smi.csv` lacks a column,
 *   naming the file and line
 */
export function readCapture(name: string): Capture {
  const dir = join(CAPTURED_ROOT, name);
  const bodies = jsonLines(join(dir, 'batches.jsonl')).map((raw, i) => {
    const row = raw as { received_ms?: unknown; content_encoding?: unknown; batch?: unknown };
    if (typeof row.received_ms !== 'number' || row.batch === undefined)
      throw new Error(`${name}/batches.jsonl line ${i + 1}: expected {received_ms, batch}`);
    return {
      receivedMs: row.received_ms,
      contentEncoding: String(row.content_encoding ?? ''),
      batch: row.batch,
    };
  });
  const phases = jsonLines(join(dir, 'phases.jsonl')).map((raw) => {
    const row = raw as { phase: string; start_ms: number; end_ms: number; detail?: string };
    return { phase: row.phase, startMs: row.start_ms, endMs: row.end_ms, detail: row.detail ?? '' };
  });
  return {
    name,
    bodies,
    once: JSON.parse(readFileSync(join(dir, 'once.json'), 'utf8')),
    phases,
    smi: parseSmiCsv(readFileSync(join(dir, 'smi.csv'), 'utf8'), `${name}/smi.csv`),
  };
}

/**
 * Parses nvidia-smi's `--format=csv,nounits` output with a header row; timestamps
 * `YYYY/MM/DD HH:MM:SS.mmm` are read as UTC.
 *
 * @param text - the CSV
 * @param label - names the file in errors
 * @returns one sample per data row, in file order
 * @throws {Error} when a column of {@link SMI_COLUMNS} or `timestamp` is missing, or a value is
 *   not a number (N/A, [Not Supported])
 */
export function parseSmiCsv(text: string, label: string): SmiSample[] {
  const [header, ...rows] = text.split('\n').filter((l) => l.trim() !== '');
  const names = (header ?? '').split(',').map((c) => c.trim());
  const col = (name: string): number => {
    const i = names.indexOf(name);
    if (i < 0) throw new Error(`${label}: expected a column "${name}", got ${names.join(' | ')}`);
    return i;
  };
  const at = col('timestamp');
  const columns = Object.entries(SMI_COLUMNS).map(([field, name]) => [field, col(name)] as const);
  return rows.map((line, r) => {
    const cells = line.split(',').map((c) => c.trim());
    const stamp = /^(\d{4})\/(\d{2})\/(\d{2}) (\d{2}):(\d{2}):(\d{2})\.(\d{3})$/.exec(cells[at] ?? '');
    if (!stamp) throw new Error(`${label} row ${r + 2}: bad timestamp ${JSON.stringify(cells[at])}`);
    const [y, mo, d, h, mi, s, ms] = stamp.slice(1).map(Number) as [number, ...number[]];
    const sample: Record<string, number | string> = {
      atMs: Date.UTC(y, (mo ?? 1) - 1, d, h, mi, s, ms),
    };
    for (const [field, i] of columns) {
      const cell = cells[i] ?? '';
      if (field === 'uuid') {
        sample[field] = cell;
        continue;
      }
      const value = Number(cell);
      if (cell === '' || !Number.isFinite(value))
        throw new Error(`${label} row ${r + 2}: column ${i + 1} (${field}) is not a number: ${cell}`);
      sample[field] = value;
    }
    return sample as unknown as SmiSample;
  });
}

/**
 * The phase that wholly contains `[startMs, endMs]`, or `undefined` when the span straddles two
 * phases, a gap between them, or lies outside every phase.
 *
 * @param startMs - span start, epoch ms
 * @param endMs - span end, epoch ms
 * @param phases - the capture's phases
 */
export function phaseContaining(
  startMs: number,
  endMs: number,
  phases: readonly CapturedPhase[],
): CapturedPhase | undefined {
  return phases.find((p) => p.startMs <= startMs && endMs <= p.endMs);
}

function jsonLines(path: string): unknown[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l, i) => {
      try {
        return JSON.parse(l) as unknown;
      } catch (cause) {
        throw new Error(`${path} line ${i + 1}: not JSON`, { cause });
      }
    });
}
