import { formatIsoMicros, type GpuEvent, MAX_DETAIL_CHARS, normalizePciBusId } from '../../lambdas/contract';
import { type KernelLogOptions, type KernelLogTime, parseLogTime } from './kmsg';

/**
 * Every way the kernel log says a GPU is gone, as `gpu_lost` contract events (`source: 'kmsg'`).
 * NVML says the same with `NVML_ERROR_GPU_IS_LOST`; the agent keeps one event per GPU, whichever
 * source comes first (agent/sources/xid-merge.ts). Pure: no I/O, no clock. The patterns, each
 * tested on real lines from public bug reports (test/fixtures/real/gpu-lost/README.md):
 *
 * - `fallen_off_bus`: "… has fallen off the bus" in any NVRM line, with the Xid 79 prefix or
 *   without it (`NVRM: The NVIDIA GPU 0000:b3:00.0 … has fallen off the bus and is not
 *   responding to commands.`, printed over three lines by `dmesg`, and `NVRM: GPU 0000:91:00.0:
 *   GPU has fallen off the bus.`);
 * - `gpu_is_lost`: `NV_ERR_GPU_IS_LOST` / "GPU lost from the bus" (the driver's status 0x0F, e.g.
 *   `NVRM: nvAssertOkFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST]`);
 * - `init_failed`: `NVRM: GPU 0000:04:01.0: RmInitAdapter failed! (0x11:0x45:2525)`: the driver
 *   cannot bring a GPU up, so it is unusable until the node is repaired;
 * - `probe_failed`: the PCI core's `nvidia 0000:01:00.0: probe with driver nvidia failed with error -1`
 *   (older kernels: `nvidia: probe of 0000:01:00.0 failed with error -1`), and the driver's
 *   `NVRM: The NVIDIA probe routine failed for 1 device(s).` (the GPU of the NVRM line before it);
 * - `nvswitch_fatal`: a **fatal** NVSwitch SXid (`nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034,
 *   Fatal, Link 48 LTSSM Fault Up`): NVIDIA's Fabric Manager guide says NVLink traffic of the GPUs
 *   behind the switch stalls until the GPUs and switches are reset. The switch's PCI id is not a
 *   GPU's, so the event names no GPU (the whole instance); non-fatal SXids are not events.
 *
 * A line that names no GPU borrows the PCI id of the NVRM line just before it (at most
 * {@link GPU_LOST_CONTEXT_LINES} lines back), as `dmesg` splits one message over several lines;
 * with none, the event names no GPU (the instance). Fabric Manager's own log
 * (`/var/log/fabricmanager.log`) is not in the kernel log and is not read here.
 */

/** Why the kernel log says the GPU is gone. */
export const GPU_LOST_CAUSES = [
  'fallen_off_bus',
  'gpu_is_lost',
  'init_failed',
  'probe_failed',
  'nvswitch_fatal',
] as const;
/** One of {@link GPU_LOST_CAUSES}. */
export type GpuLostCause = (typeof GPU_LOST_CAUSES)[number];

/** One kernel-log line that says a GPU is gone. */
export interface GpuLostRecord {
  /** When; absent when the line (and its context) carries no time. */
  readonly time?: KernelLogTime;
  /** The GPU's PCI bus id as the log prints it (`0000:b3:00.0`, `0000:91:00`); absent: the whole instance. */
  readonly pci_bus_id?: string;
  /** Which pattern matched. */
  readonly cause: GpuLostCause;
  /** The message without its time prefix, trimmed. */
  readonly detail: string;
}

/** Lines after an NVRM line naming a GPU during which a line naming none is taken to be about it. */
export const GPU_LOST_CONTEXT_LINES = 4;

const PCI = '([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\\.[0-7])?)';
/** NVRM lines that name a GPU: `The NVIDIA GPU <pci>`, `GPU <pci>:`, `GPU at PCI:<pci>`, `Xid (PCI:<pci>)`. */
const NVRM_GPU = new RegExp(
  `NVRM: (?:The NVIDIA GPU ${PCI}|GPU ${PCI}:|GPU at PCI:${PCI}|Xid \\((?:PCI:)?${PCI}\\))`,
);
const FALLEN = /fallen off the bus/i;
const IS_LOST = /NV_ERR_GPU_IS_LOST|GPU lost from the bus/;
const INIT_FAILED = /NVRM: .*RmInitAdapter failed/;
const PROBE_FAILED = new RegExp(
  `nvidia ${PCI}: probe with driver nvidia failed|nvidia: probe of ${PCI} failed with error|NVRM: The NVIDIA probe routine failed for \\d+ device`,
);
const SXID_FATAL = new RegExp(`(nvidia-nvswitch\\d+): SXid \\(PCI:${PCI}\\): (\\d+), Fatal\\b`);

/**
 * Reads kernel-log lines one by one and returns those that say a GPU is gone. Keeps the last
 * NVRM line's GPU for {@link GPU_LOST_CONTEXT_LINES} lines (a message split over lines).
 *
 * @example
 * const d = new GpuLostDetector();
 * for (const line of lines) { const r = d.feed(line); if (r) records.push(r); }
 */
export class GpuLostDetector {
  readonly #opts: KernelLogOptions;
  #contextPci: string | undefined;
  #contextTime: KernelLogTime | undefined;
  #contextAge = Number.POSITIVE_INFINITY;

  /** @param opts - time zone and year for log formats that lack them (see {@link KernelLogOptions}) */
  constructor(opts: KernelLogOptions = {}) {
    this.#opts = opts;
  }

  /**
   * Offers one line.
   *
   * @param line - one kernel-log line in any format `parseLogTime` reads, without its newline
   * @returns the record when the line says a GPU is gone, else `undefined`
   */
  feed(line: string): GpuLostRecord | undefined {
    this.#contextAge++;
    const { time, message } = parseLogTime(line, this.#opts);
    const named = NVRM_GPU.exec(message);
    const ownPci = named ? (named[1] ?? named[2] ?? named[3] ?? named[4]) : undefined;
    if (ownPci !== undefined) {
      this.#contextPci = ownPci;
      this.#contextTime = time;
      this.#contextAge = 0;
    }
    const cause = causeOf(message);
    if (cause === undefined) return undefined;
    const detail = message.trim().slice(0, MAX_DETAIL_CHARS);
    if (cause.kind === 'nvswitch_fatal') return { ...(time ? { time } : {}), cause: cause.kind, detail };
    const inContext = this.#contextAge <= GPU_LOST_CONTEXT_LINES;
    const pci = cause.pci ?? ownPci ?? (inContext ? this.#contextPci : undefined);
    const at = time ?? (inContext ? this.#contextTime : undefined);
    return {
      ...(at ? { time: at } : {}),
      ...(pci !== undefined ? { pci_bus_id: pci } : {}),
      cause: cause.kind,
      detail,
    };
  }
}

function causeOf(message: string): { kind: GpuLostCause; pci?: string } | undefined {
  const sxid = SXID_FATAL.exec(message);
  if (sxid) return { kind: 'nvswitch_fatal' };
  const probe = PROBE_FAILED.exec(message);
  if (probe) {
    const pci = probe[1] ?? probe[2];
    return pci === undefined ? { kind: 'probe_failed' } : { kind: 'probe_failed', pci };
  }
  if (!message.includes('NVRM')) return undefined;
  if (FALLEN.test(message)) return { kind: 'fallen_off_bus' };
  if (IS_LOST.test(message)) return { kind: 'gpu_is_lost' };
  if (INIT_FAILED.test(message)) return { kind: 'init_failed' };
  return undefined;
}

/**
 * Turns a record into a contract event: `kind: 'gpu_lost'`, `source: 'kmsg'`, the PCI bus id
 * normalised (`0000:b3:00.0`), `detail` = `<cause>: <message>` cut to {@link MAX_DETAIL_CHARS}.
 *
 * @param record - from {@link GpuLostDetector.feed}
 * @param opts - `bootTime`: when the host booted, needed for monotonic (raw kmsg, plain dmesg) times
 * @returns the event; `undefined` when the time cannot be known (no time, or monotonic without `bootTime`)
 */
export function toGpuLostEvent(record: GpuLostRecord, opts: { bootTime?: Date } = {}): GpuEvent | undefined {
  const t = record.time;
  if (!t) return undefined;
  let epochMs: number;
  if (t.kind === 'wall') epochMs = t.epochMs;
  else if (opts.bootTime) epochMs = opts.bootTime.getTime() + t.sinceBootS * 1000;
  else return undefined;
  const pci = normalizePciBusId(record.pci_bus_id);
  return {
    at: formatIsoMicros(epochMs),
    kind: 'gpu_lost',
    source: 'kmsg',
    ...(pci ? { pci_bus_id: pci } : {}),
    detail: `${record.cause}: ${record.detail}`.slice(0, MAX_DETAIL_CHARS),
  };
}

/**
 * Runs a {@link GpuLostDetector} over a whole kernel log.
 *
 * @param text - the log, lines separated by `\n` or `\r\n`
 * @param opts - time zone and year for formats that lack them
 * @returns the records, in log order
 */
export function findGpuLost(text: string, opts: KernelLogOptions = {}): GpuLostRecord[] {
  const detector = new GpuLostDetector(opts);
  const out: GpuLostRecord[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const record = detector.feed(line);
    if (record) out.push(record);
  }
  return out;
}
