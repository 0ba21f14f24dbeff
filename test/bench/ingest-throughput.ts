/**
 * Ingest throughput on the Lambda path (target in BENCHMARKS.md): the production handler as the Lambda
 * builds it (`handlerFromEnvironment`: Powertools Logger, real SDK v3 clients for Firehose or
 * Timestream, DynamoDB, SNS, EC2, Auto Scaling, IAM) with a canned `requestHandler`, so every call
 * is really built, serialised, signed and parsed; only the network is missing. Batches as the agent
 * sends them every 60 s: 6 flush windows × 8 GPUs + 8 horizons, gzip'd, from an instance-role
 * session API Gateway has authenticated, in the event API Gateway builds (it decompresses the gzip
 * body and passes JSON text). `--batch agent` (default): the request the agent itself
 * builds over the fake NVML (every NVML metric, GPM, process lists; `fixtures/agent-batch.ts`);
 * `--batch synthetic`: the smaller hand-built batch of `multiWindowBatch` (no process lists).
 *
 * Prints flush windows per CPU-second (user + system time of the whole process, GC threads
 * included) against the target, the AWS calls per batch, and with `--profile` the top functions
 * of a CPU profile of the measured loop.
 *
 * Run: `npx tsx test/bench/ingest-throughput.ts [--store athena|timestream] [--batch agent|synthetic] [--batches 2000] [--profile]`
 * (part of `npm run bench`).
 */
import { Session } from 'node:inspector/promises';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { DEFAULT_COST_MODEL_INPUT, pipelineCost } from '../../bin/cost-model/pipeline-cost';
import type { Batch } from '../../lambdas/contract';
import { toProxyEvent } from '../../lambdas/local/api-gateway-event';
import { CANNED_CALLER, cannedEnvironment, cannedIngest } from '../lambdas/handlers/canned-ingest';
import { multiWindowBatch } from '../lambdas/handlers/multi-window-batch';
import { identityOf } from '../lambdas/handlers/proxy-event';
import { agentBatch } from './fixtures/agent-batch';

/** Target, flush windows per CPU-second. */
const TARGET_WINDOWS_PER_CPU_S = 20_000;
const WINDOWS = 6;
const GPUS = 8;

const arg = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback);
};
const store = arg('store', 'athena');
const kind = arg('batch', 'agent');
// A warm Lambda execution environment serves thousands of batches; the first few hundred run while V8
// is still optimising (≈ 25 % slower per batch here). Cold start is measured apart
// (ingest-cold-start.ts), so this measures the steady state: 2,000 batches after 200 of warm-up.
const batches = Number(arg('batches', '2000'));
const warmup = 200;
const profile = process.argv.includes('--profile');

const { handler, aws: canned } = cannedIngest(cannedEnvironment(store));

/** The batch of `seq` ending at `endMs`: the agent's own request shifted in time, or the synthetic one. */
async function batchOf(): Promise<(seq: number, endMs: number) => Batch> {
  if (kind === 'synthetic') return (seq, endMs) => multiWindowBatch(seq, endMs, WINDOWS, GPUS);
  const baseEnd = Date.parse('2026-01-01T00:00:00.000Z');
  const text = JSON.stringify(await agentBatch(baseEnd));
  // Every time in the batch moves by the same offset; ids and seq become this batch's.
  return (seq, endMs) =>
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
}
const makeBatch = await batchOf();

/**
 * The proxy event of batch `seq` as API Gateway builds it for the agent's request (REST, IAM auth):
 * the agent sends `Content-Type: application/json` with `Content-Encoding: gzip`, API Gateway
 * decompresses it and passes UTF-8 text (`toProxyEvent`, the model the local API uses).
 */
function event(seq: number, endMs: number): APIGatewayProxyEvent {
  const outcome = toProxyEvent({
    method: 'POST',
    path: '/v1/batches',
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
    body: gzipSync(JSON.stringify(makeBatch(seq, endMs))),
    identity: identityOf(CANNED_CALLER),
  });
  if (outcome.kind !== 'event') throw new Error(`API Gateway answers ${outcome.result.statusCode} itself`);
  return outcome.event;
}

// The batches of one instance, one every 60 s up to now (built before measuring: gzip is the agent's).
const total = warmup + batches;
const now = Date.now();
const events = Array.from({ length: total }, (_, i) => event(i + 1, now - (total - i) * 60_000));
const sample = makeBatch(1, now);
const jsonBytes = JSON.stringify(sample).length;
const windowsPerBatch = sample.windows.filter((w) => w.kind === 'flush').length;
const gzipBytes = gzipSync(JSON.stringify(sample)).length;

// Powertools writes one line per batch to stdout: formatted and serialised here, not written.
const write = process.stdout.write.bind(process.stdout);
let logLines = 0;
process.stdout.write = (() => {
  logLines++;
  return true;
}) as typeof process.stdout.write;

for (let i = 0; i < warmup; i++) {
  const res = await handler(events[i]!);
  if (res.statusCode !== 202)
    throw new Error(`Expected 202 for a valid batch, got ${res.statusCode}: ${res.body}`);
}
const callsBefore = new Map(canned.calls);
const session = profile ? new Session() : undefined;
if (session) {
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.setSamplingInterval', { interval: 100 });
  await session.post('Profiler.start');
}
logLines = 0;
const cpu0 = process.cpuUsage();
const t0 = process.hrtime.bigint();
// CPU ms per batch in blocks of BLOCK batches: a shared VM's slow minutes show as slow blocks.
const BLOCK = 100;
const blockMs: number[] = [];
let blockCpu = process.cpuUsage();
for (let i = warmup; i < total; i++) {
  const res = await handler(events[i]!);
  if (res.statusCode !== 202)
    throw new Error(`Expected 202 for a valid batch, got ${res.statusCode}: ${res.body}`);
  if ((i - warmup + 1) % BLOCK === 0) {
    const used = process.cpuUsage(blockCpu);
    blockMs.push((used.user + used.system) / 1000 / BLOCK);
    blockCpu = process.cpuUsage();
  }
}
const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
const taken = session ? await session.post('Profiler.stop') : undefined;
process.stdout.write = write;

const cpuS = (cpu.user + cpu.system) / 1e6;
const windows = batches * windowsPerBatch;
const perCpuS = windows / cpuS;
console.log(
  `ingest, STORE=${store}, ${batches} ${kind} batches of ${windowsPerBatch} flush + ${sample.windows.length - windowsPerBatch} horizon windows (${(jsonBytes / 1000).toFixed(1)} kB JSON, ${(gzipBytes / 1000).toFixed(1)} kB gzip), Node ${process.version}`,
);
console.log(
  `${(perCpuS).toFixed(0)} flush windows per CPU-second (${((cpuS * 1000) / batches).toFixed(2)} ms CPU, ${((wallS * 1000) / batches).toFixed(2)} ms wall per batch) — ${perCpuS >= TARGET_WINDOWS_PER_CPU_S ? 'meets' : 'MISSES'} ≥ ${TARGET_WINDOWS_PER_CPU_S}`,
);
if (blockMs.length > 0) {
  const sorted = [...blockMs].sort((a, b) => a - b);
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number;
  const rate = (ms: number) => (windowsPerBatch / (ms / 1000)).toFixed(0);
  console.log(
    `blocks of ${BLOCK} batches (${sorted.length}): fastest ${rate(at(0))}, median ${rate(at(0.5))}, slowest ${rate(sorted[sorted.length - 1] as number)} flush windows per CPU-second (the headline above is the whole run)`,
  );
}
const perBatch = [...canned.calls]
  .map(([k, n]) => [k, (n - (callsBefore.get(k) ?? 0)) / batches] as const)
  .filter(([, n]) => n > 0)
  .map(([k, n]) => `${k} ${n.toFixed(2)}`);
console.log(
  `AWS calls per batch: ${perBatch.join(', ')}; log lines per batch: ${(logLines / batches).toFixed(2)}`,
);
// The rows the last batch sent to the gpu_windows stream, as Firehose bills them (the cost model's
// `firehoseRowBytes`: UTF-8 bytes of one row, without its newline).
const put = canned.lastRequest.get('firehose:PutRecordBatch');
if (put !== undefined) {
  const { DeliveryStreamName, Records } = JSON.parse(put.body) as {
    DeliveryStreamName: string;
    Records: { Data: string }[];
  };
  const rows = Records.flatMap((r) => Buffer.from(r.Data, 'base64').toString('utf8').split('\n')).filter(
    (l) => l !== '',
  );
  const rowBytes = rows.reduce((n, l) => n + Buffer.byteLength(l), 0) / rows.length;
  console.log(
    `Firehose rows of the last batch (${DeliveryStreamName}): ${rows.length} in ${Records.length} record(s), ${rowBytes.toFixed(0)} B per row as JSON`,
  );
}
const cost = pipelineCost({
  ...DEFAULT_COST_MODEL_INPUT,
  store: store === 'timestream' ? 'timestream' : 'athena',
  lambdaCpuMsPerBatch: (cpuS * 1000) / batches,
});
console.log(
  `with this CPU per batch the pipeline costs $${cost.totalUsdPerGpuMonth.toFixed(4)} per GPU-month (cost-model defaults otherwise)`,
);

/** Functions of the handler path whose inclusive time the profile reports. */
const STAGES = [
  'decodeJsonBody',
  'verifySender',
  'parseBatch',
  'processBatch',
  'attributeEventsToGpus',
  'evaluatePointRules',
  'judgeWindows',
  'getInstanceState',
  'storeRowsOf',
  'write',
  'gpuWindowJson',
  'send',
  'acceptedBatchMetrics',
  'emit',
  'info',
];

if (taken) {
  const { nodes, samples, timeDeltas } = taken.profile;
  const byId = new Map(nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let all = 0;
  samples?.forEach((id, i) => {
    const node = byId.get(id);
    const dt = timeDeltas?.[i] ?? 0;
    if (node === undefined) return;
    const { functionName, url, lineNumber } = node.callFrame;
    const file = url.replace(/^.*node_modules\//, '').replace(/^.*\/(lambdas|test)\//, '$1/');
    const key = `${functionName || '(anonymous)'} ${file}:${lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + dt);
    all += dt;
  });
  const byFile = new Map<string, number>();
  for (const [key, us] of self) {
    const file = key.slice(key.indexOf(' ') + 1).replace(/:\d+$/, '') || '(native)';
    byFile.set(file, (byFile.get(file) ?? 0) + us);
  }
  // Inclusive time of the handler's stages (a stage's callees included), by function name.
  const selfById = new Map<number, number>();
  samples?.forEach((id, i) => {
    selfById.set(id, (selfById.get(id) ?? 0) + (timeDeltas?.[i] ?? 0));
  });
  const inclusive = new Map<string, number>();
  const walk = (id: number, open: ReadonlySet<string>): number => {
    const node = byId.get(id);
    if (node === undefined) return 0;
    let t = selfById.get(id) ?? 0;
    const name = node.callFrame.functionName;
    const counted = STAGES.includes(name) && !open.has(name);
    const inner = counted ? new Set([...open, name]) : open;
    for (const child of node.children ?? []) t += walk(child, inner);
    if (counted) inclusive.set(name, (inclusive.get(name) ?? 0) + t);
    return t;
  };
  walk(nodes[0]!.id, new Set());
  console.log('CPU profile, inclusive time of the stages:');
  for (const name of STAGES)
    console.log(`  ${((100 * (inclusive.get(name) ?? 0)) / all).toFixed(1).padStart(5)} %  ${name}`);
  console.log('CPU profile, top files by self time:');
  for (const [file, us] of [...byFile].sort((a, b) => b[1] - a[1]).slice(0, 15)) {
    console.log(`  ${((100 * us) / all).toFixed(1).padStart(5)} %  ${file}`);
  }
  console.log('CPU profile, top functions by self time:');
  for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    console.log(`  ${((100 * us) / all).toFixed(1).padStart(5)} %  ${key}`);
  }
}
