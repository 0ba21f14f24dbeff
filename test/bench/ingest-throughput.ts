/**
 * Ingest throughput on the Lambda path (target in BENCHMARKS.md): the production handler as the Lambda
 * builds it (`handlerFromEnvironment`: Powertools Logger, real SDK v3 clients for Firehose or
 * Timestream, DynamoDB, SNS, EC2, Auto Scaling, IAM) with a canned `requestHandler`, so every call
 * is really built, serialised, signed and parsed; only the network is missing. Batches as the agent
 * sends them every 60 s: 6 flush windows × 8 GPUs + 8 horizons, gzip'd, from an instance-role
 * session API Gateway has authenticated.
 *
 * Prints flush windows per CPU-second (user + system time of the whole process, GC threads
 * included) against the target, the AWS calls per batch, and with `--profile` the top functions
 * of a CPU profile of the measured loop.
 *
 * Run: `npx tsx test/bench/ingest-throughput.ts [--store athena|timestream] [--batches 2000] [--profile]`
 * (part of `npm run bench`).
 */
import { Session } from 'node:inspector/promises';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { DEFAULT_COST_MODEL_INPUT, pipelineCost } from '../../bin/cost-model/pipeline-cost';
import { CANNED_CALLER, cannedEnvironment, cannedIngest } from '../lambdas/handlers/canned-ingest';
import { multiWindowBatch } from '../lambdas/handlers/multi-window-batch';

/** Target, flush windows per CPU-second. */
const TARGET_WINDOWS_PER_CPU_S = 10_000;
const WINDOWS = 6;
const GPUS = 8;

const arg = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(`--${name}`);
  return at === -1 ? fallback : (process.argv[at + 1] ?? fallback);
};
const store = arg('store', 'athena');
// A warm Lambda execution environment serves thousands of batches; the first few hundred run while V8
// is still optimising (≈ 25 % slower per batch here). Cold start is measured apart
// (ingest-cold-start.ts), so this measures the steady state: 2,000 batches after 200 of warm-up.
const batches = Number(arg('batches', '2000'));
const warmup = 200;
const profile = process.argv.includes('--profile');

const { handler, aws: canned } = cannedIngest(cannedEnvironment(store));

/** The proxy event of batch `seq` (API Gateway REST, IAM auth, binary media type: base64 body). */
function event(seq: number, endMs: number): APIGatewayProxyEvent {
  const body = gzipSync(JSON.stringify(multiWindowBatch(seq, endMs, WINDOWS, GPUS)));
  return {
    httpMethod: 'POST',
    path: '/v1/batches',
    resource: '/v1/batches',
    headers: { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' },
    body: body.toString('base64'),
    isBase64Encoded: true,
    requestContext: {
      identity: { userArn: CANNED_CALLER },
    },
  } as unknown as APIGatewayProxyEvent;
}

// The batches of one instance, one every 60 s up to now (built before measuring: gzip is the agent's).
const total = warmup + batches;
const now = Date.now();
const events = Array.from({ length: total }, (_, i) => event(i + 1, now - (total - i) * 60_000));
const jsonBytes = JSON.stringify(multiWindowBatch(1, now, WINDOWS, GPUS)).length;
const gzipBytes = Buffer.from(events[0]?.body ?? '', 'base64').length;

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
for (let i = warmup; i < total; i++) {
  const res = await handler(events[i]!);
  if (res.statusCode !== 202)
    throw new Error(`Expected 202 for a valid batch, got ${res.statusCode}: ${res.body}`);
}
const wallS = Number(process.hrtime.bigint() - t0) / 1e9;
const cpu = process.cpuUsage(cpu0);
const taken = session ? await session.post('Profiler.stop') : undefined;
process.stdout.write = write;

const cpuS = (cpu.user + cpu.system) / 1e6;
const windows = batches * WINDOWS * GPUS;
const perCpuS = windows / cpuS;
console.log(
  `ingest, STORE=${store}, ${batches} batches of ${WINDOWS} windows × ${GPUS} GPUs + ${GPUS} horizons (${(jsonBytes / 1024).toFixed(1)} KiB JSON, ${(gzipBytes / 1024).toFixed(1)} KiB gzip), Node ${process.version}`,
);
console.log(
  `${(perCpuS).toFixed(0)} flush windows per CPU-second (${((cpuS * 1000) / batches).toFixed(2)} ms CPU, ${((wallS * 1000) / batches).toFixed(2)} ms wall per batch) — ${perCpuS >= TARGET_WINDOWS_PER_CPU_S ? 'meets' : 'MISSES'} ≥ ${TARGET_WINDOWS_PER_CPU_S}`,
);
const perBatch = [...canned.calls]
  .map(([k, n]) => [k, (n - (callsBefore.get(k) ?? 0)) / batches] as const)
  .filter(([, n]) => n > 0)
  .map(([k, n]) => `${k} ${n.toFixed(2)}`);
console.log(
  `AWS calls per batch: ${perBatch.join(', ')}; log lines per batch: ${(logLines / batches).toFixed(2)}`,
);
const cost = pipelineCost({
  ...DEFAULT_COST_MODEL_INPUT,
  store: store === 'timestream' ? 'timestream' : 'athena',
  lambdaCpuMsPerBatch: (cpuS * 1000) / batches,
});
console.log(
  `with this CPU per batch the pipeline costs $${cost.totalUsdPerGpuMonth.toFixed(4)} per GPU-month (cost-model defaults otherwise)`,
);

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
  console.log('CPU profile, top functions by self time:');
  for (const [key, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, 20)) {
    console.log(`  ${((100 * us) / all).toFixed(1).padStart(5)} %  ${key}`);
  }
}
