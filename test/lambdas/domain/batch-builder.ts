import { readFileSync } from 'node:fs';
import { type Batch, type GpuMetrics, parseBatch } from '../../../lambdas/contract';

/**
 * Test helpers: build real contract-v1 batches (validated by `parseBatch`) and read NVRM Xid lines
 * from the real kernel-log captures in test/fixtures/real/.
 */

/** A p5.48xlarge host in an Auto Scaling group, tagged with a team and a job. */
export const HOST = {
  instance_id: 'i-0abc12345def67890',
  instance_type: 'p5.48xlarge',
  region: 'us-east-1',
  az: 'us-east-1a',
  lifecycle: 'on-demand',
  asg_name: 'train-p5',
  tags: { team: 'llm', job: 'pretrain-7b' },
} as const;

/** A raw (unvalidated) GPU window. */
export function flushWindow(
  index: number,
  metrics: GpuMetrics,
  opts: { start?: string; end?: string; pci?: string; kind?: 'flush' | 'horizon' } = {},
): Record<string, unknown> {
  return {
    kind: opts.kind ?? 'flush',
    start: opts.start ?? '2026-03-10T10:00:00Z',
    end: opts.end ?? '2026-03-10T10:00:10Z',
    gpu: {
      index,
      ...(opts.pci === undefined ? {} : { pci_bus_id: opts.pci }),
      name: 'NVIDIA H100 80GB HBM3',
    },
    metrics,
  };
}

/** Default server clock of built batches: just after the default window. */
export const NOW = new Date('2026-03-10T10:00:20Z');

/** Builds a batch from raw parts and validates it with the real contract parser. */
export function makeBatch(
  parts: {
    windows?: Record<string, unknown>[];
    events?: Record<string, unknown>[];
    efa?: Record<string, unknown>[];
    host?: Record<string, unknown>;
    sentAt?: string;
  },
  now: Date = NOW,
): Batch {
  return parseBatch(
    {
      schema: 'gpu-sentinel/v1',
      batch_id: '6f1c2a3b-4d5e-4f60-8a7b-9c0d1e2f3a4b',
      seq: 1,
      sent_at: parts.sentAt ?? now.toISOString(),
      host: parts.host ?? HOST,
      agent: { version: '0.1.0', profiling_source: 'gpm' },
      windows: parts.windows ?? [],
      ...(parts.events === undefined ? {} : { events: parts.events }),
      ...(parts.efa === undefined ? {} : { efa: parts.efa }),
    },
    now,
  );
}

const XID_LINE =
  /(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d),(\d+)([+-]\d\d:\d\d) NVRM: Xid \(PCI:([0-9A-Fa-f:.]+)\): (\d+), pid=([^,]+), name=([^,]+), (.*)$/;

/** Reads the NVRM Xid lines of a real kmsg capture as raw contract events (source `kmsg`). */
export function readKmsgXids(file: string): Record<string, unknown>[] {
  const text = readFileSync(new URL(`../../fixtures/real/${file}`, import.meta.url), 'utf8');
  const events: Record<string, unknown>[] = [];
  for (const line of text.split('\n')) {
    const m = XID_LINE.exec(line);
    if (!m) continue;
    const [, time, frac, offset, pci, xid, pid, name, detail] = m;
    events.push({
      at: `${time}.${frac}${offset}`,
      kind: 'xid',
      pci_bus_id: pci,
      xid: Number(xid),
      source: 'kmsg',
      ...(/^\d+$/.test(pid ?? '') ? { pid: Number(pid) } : {}),
      ...(name === '<unknown>' ? {} : { process_name: name }),
      detail,
    });
  }
  return events;
}
