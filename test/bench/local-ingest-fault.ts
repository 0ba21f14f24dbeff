import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import type { Batch, GpuEvent } from '../../lambdas/contract';
import { startLocalPipeline } from '../../lambdas/local/local-pipeline';
import { multiWindowBatch } from '../lambdas/handlers/multi-window-batch';

/**
 * The local ingest's cost for the batch a fault sends at once: `npx tsx
 * test/bench/local-ingest-fault.ts [--batches 80] [--warmup 10]`.
 *
 * One `gpu-sentinel local` pipeline (the ingest handler behind the loopback API, DuckDB, console
 * alerts, dry-run remediation); each batch is what an agent's urgent flush sends (one 10 s flush
 * window per GPU of a p5.48xlarge, 8 GPUs, an NVML Xid 79 on GPU 0) from a new instance, posted
 * one after another. Prints the process CPU (user + system: the handler and DuckDB's threads) and
 * the wall time per batch after the warm-up. From the 10th instance on, the faults are a fleet
 * storm (one incident instead of an alert per instance), as in any run of this length; compare
 * runs of the same `--batches`.
 */
const { values } = parseArgs({
  options: {
    batches: { type: 'string', default: '80' },
    warmup: { type: 'string', default: '10' },
  },
});
const batches = Number(values.batches);
const warmup = Number(values.warmup);

const outDir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-local-ingest-'));
const pipeline = await startLocalPipeline({
  outDir,
  log: { info() {}, warn() {}, error() {} },
  write: () => {},
});
let cpu = process.cpuUsage();
let wall = performance.now();
for (let i = 0; i < warmup + batches; i++) {
  if (i === warmup) {
    cpu = process.cpuUsage();
    wall = performance.now();
  }
  const end = Date.now();
  const base = multiWindowBatch(i + 1, end, 1, 8);
  const xid: GpuEvent = {
    at: new Date(end).toISOString(),
    kind: 'xid',
    source: 'nvml',
    xid: 79,
    pci_bus_id: base.windows[0]?.gpu.pci_bus_id,
    detail: 'GPU has fallen off the bus.',
  };
  const batch: Batch = {
    ...base,
    host: { ...base.host, instance_id: `i-0${(0xb000000000000000n + BigInt(i)).toString(16)}` },
    events: [xid],
  };
  const response = await fetch(`${pipeline.url}/v1/batches`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(batch),
  });
  if (response.status >= 300) throw new Error(`batch ${i}: ${response.status} ${await response.text()}`);
}
const used = process.cpuUsage(cpu);
const wallMs = (performance.now() - wall) / batches;
const alerts = pipeline.alerts.published.length;
await pipeline.close();
rmSync(outDir, { recursive: true, force: true });
process.stdout.write(
  `local ingest, a fault's urgent batch (8 GPUs, Xid 79), ${batches} batches after ${warmup}: ` +
    `CPU ${((used.user + used.system) / 1000 / batches).toFixed(1)} ms/batch, wall ${wallMs.toFixed(1)} ms/batch, ` +
    `${alerts} alerts (${cpus()[0]?.model ?? 'unknown CPU'}, Node.js ${process.versions.node}, load average ${loadavg()[0]?.toFixed(1)})\n`,
);
