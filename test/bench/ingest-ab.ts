/**
 * Ingest CPU per batch, this tree against another, in one process: the way to tell a change of a
 * few per cent on a shared machine, where two runs of `ingest-throughput.ts` minutes apart differ
 * by more than that. Both trees' production handlers (`cannedIngest`: real SDK v3 clients, canned
 * answers, Powertools) take the same events (the agent's own 60 s request, gzip'd, as API Gateway
 * passes it, as `ingest-throughput.ts` builds them), 200 batches of warm-up each, then blocks of
 * 100 batches alternating A/B and B/A; the CPU of each block (user + system, `process.cpuUsage`,
 * GC threads included) per batch.
 *
 * Prints the median CPU per batch of each tree's blocks, the ratio of the medians, the median of
 * the paired block ratios, this tree's flush windows per CPU-second, and the load average before
 * and after (the machine is shared: report ratios with it).
 *
 * The other tree is a folder inside this checkout (so its imports find this checkout's
 * `node_modules`), e.g. `git archive <rev> lambdas test bin | tar -x -C .tmp/base` (`.tmp/` is
 * git-ignored; remove it afterwards).
 *
 * Run: `npx tsx test/bench/ingest-ab.ts --base .tmp/base [--rounds 12]`
 */
import { loadavg } from 'node:os';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import type { Batch } from '../../lambdas/contract';
import type { IngestHandler } from '../../lambdas/handlers/ingest-handler';
import { toProxyEvent } from '../../lambdas/local/api-gateway-event';
import { CANNED_CALLER, cannedEnvironment, cannedIngest } from '../lambdas/handlers/canned-ingest';
import { identityOf } from '../lambdas/handlers/proxy-event';
import { agentBatch } from './fixtures/agent-batch';

const arg = (name: string): string | undefined => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? undefined : process.argv[at + 1];
};
const base = arg('base');
if (base === undefined) throw new Error('Expected --base <folder of the other tree, inside this checkout>');
const rounds = Number(arg('rounds') ?? '12');
const BLOCK = 100;
const WARMUP = 200;

// The agent's request shifted in time: every time moves by the same offset, seq and id are the batch's.
const baseEnd = Date.parse('2026-01-01T00:00:00.000Z');
const text = JSON.stringify(await agentBatch(baseEnd));
const batchOf = (seq: number, endMs: number): Batch =>
  JSON.parse(
    text.replace(
      /"(\d{4}-\d\d-\d\dT[\d:.]+Z)"/g,
      (_m, iso: string) => `"${new Date(Date.parse(iso) + endMs - baseEnd).toISOString()}"`,
    ),
    (key, value) =>
      key === 'seq'
        ? seq
        : key === 'batch_id'
          ? `8a7f3c52-6a0e-4b8e-9f3d-${String(seq).padStart(12, '0')}`
          : value,
  ) as Batch;
const flushWindows = batchOf(1, baseEnd).windows.filter((w) => w.kind === 'flush').length;

const total = WARMUP + rounds * BLOCK;
const now = Date.now();
const events: APIGatewayProxyEvent[] = Array.from({ length: total }, (_, i) => {
  const outcome = toProxyEvent({
    method: 'POST',
    path: '/v1/batches',
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
    body: gzipSync(JSON.stringify(batchOf(i + 1, now - (total - i) * 60_000))),
    identity: identityOf(CANNED_CALLER),
  });
  if (outcome.kind !== 'event') throw new Error(`API Gateway answers ${outcome.result.statusCode} itself`);
  return outcome.event;
});

const other = (await import(
  pathToFileURL(resolve(base, 'test/lambdas/handlers/canned-ingest.ts')).href
)) as typeof import('../lambdas/handlers/canned-ingest');
const handlerA: IngestHandler = other.cannedIngest(other.cannedEnvironment('athena')).handler;
const handlerB: IngestHandler = cannedIngest(cannedEnvironment('athena')).handler;

/** CPU ms per batch of `handler` over events `from`..`from + n`. */
async function cpuMsPerBatch(handler: IngestHandler, from: number, n: number): Promise<number> {
  const cpu0 = process.cpuUsage();
  for (let i = from; i < from + n; i++) {
    const res = await handler(events[i] as APIGatewayProxyEvent);
    if (res.statusCode !== 202) throw new Error(`Expected 202, got ${res.statusCode}: ${res.body}`);
  }
  const cpu = process.cpuUsage(cpu0);
  return (cpu.user + cpu.system) / 1000 / n;
}

// Powertools writes a few lines per batch to stdout: formatted and serialised, not written.
const write = process.stdout.write.bind(process.stdout);
process.stdout.write = (() => true) as typeof process.stdout.write;
await cpuMsPerBatch(handlerA, 0, WARMUP);
await cpuMsPerBatch(handlerB, 0, WARMUP);
const loadBefore = loadavg()[0] ?? 0;
const a: number[] = [];
const b: number[] = [];
for (let r = 0; r < rounds; r++) {
  const from = WARMUP + r * BLOCK;
  if (r % 2 === 0) {
    a.push(await cpuMsPerBatch(handlerA, from, BLOCK));
    b.push(await cpuMsPerBatch(handlerB, from, BLOCK));
  } else {
    b.push(await cpuMsPerBatch(handlerB, from, BLOCK));
    a.push(await cpuMsPerBatch(handlerA, from, BLOCK));
  }
}
process.stdout.write = write;

const median = (xs: readonly number[]): number => [...xs].sort((p, q) => p - q)[xs.length >> 1] ?? Number.NaN;
const paired = a.map((v, i) => (b[i] ?? Number.NaN) / v);
console.log(
  `ingest A/B, ${rounds} blocks of ${BLOCK} batches each (${flushWindows} flush windows a batch), Node ${process.version}: ` +
    `base ${median(a).toFixed(3)} ms, this tree ${median(b).toFixed(3)} ms CPU per batch; ` +
    `ratio of medians ${(median(b) / median(a)).toFixed(3)}, median of paired ratios ${median(paired).toFixed(3)}; ` +
    `this tree ${((flushWindows / median(b)) * 1000).toFixed(0)} flush windows per CPU-second; ` +
    `load average ${loadBefore.toFixed(1)} → ${(loadavg()[0] ?? 0).toFixed(1)}`,
);
