import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { gunzipSync } from 'node:zlib';
import { Spool } from '../../agent/spool/spool';
import type { Batch } from '../../lambdas/contract';

/**
 * Which delivery path, by measurement: `npx tsx test/bench/agent-delivery.ts [--flush-ms 200]
 * [--ratio 6] [--seconds 12] [--kills 5]`.
 *
 * Runs the agent loop (test/agent/fixtures/delivery-kill-child.ts: a fake 2-GPU source, the real
 * BatchBuilder, HttpSender to a loopback sink here) on a compressed clock, `--flush-ms` windows, for
 * four delivery paths:
 * - spool first, sent every flush (the agent before merged sends);
 * - spool first, sent every `--ratio` flushes, spooled batches merged into one request (the agent now);
 * - send first, every flush (in memory; spooled only on failure — the API is up here);
 * - send first, every `--ratio` flushes (windows wait in memory for the send).
 * For each: CPU of the child per closed window (no strace), fsync + fdatasync calls per window
 * (`strace -f -c`, a second run), requests per window at the sink, and windows lost after `--kills`
 * SIGKILLs at random points (a closed window neither at the sink nor in the spool). Prints Markdown.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const CHILD = join(ROOT, 'test', 'agent', 'fixtures', 'delivery-kill-child.ts');

const { values } = parseArgs({
  options: {
    'flush-ms': { type: 'string', default: '200' },
    ratio: { type: 'string', default: '6' },
    seconds: { type: 'string', default: '12' },
    kills: { type: 'string', default: '5' },
  },
});
const flushMs = Number(values['flush-ms']);
const ratio = Number(values.ratio);
const seconds = Number(values.seconds);
const kills = Number(values.kills);

interface Path {
  readonly name: string;
  readonly mode: 'spool' | 'memory';
  readonly sendMs: number;
}

const PATHS: readonly Path[] = [
  { name: 'spool first, sent every flush (before)', mode: 'spool', sendMs: 0 },
  { name: `spool first, ${ratio} flushes merged per send (now)`, mode: 'spool', sendMs: flushMs * ratio },
  { name: 'send first, every flush', mode: 'memory', sendMs: 0 },
  { name: `send first, every ${ratio} flushes`, mode: 'memory', sendMs: flushMs * ratio },
];

/** The loopback sink: counts requests and the flush-window ends it received. */
const sink = { requests: 0, ends: new Set<number>() };
const server = createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const batch = JSON.parse(gunzipSync(Buffer.concat(chunks)).toString('utf8')) as Batch;
    sink.requests += 1;
    for (const w of batch.windows) if (w.kind === 'flush') sink.ends.add(Date.parse(w.end));
    res.writeHead(202, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ accepted: batch.windows.length }));
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/prod`;

interface Run {
  closed: number[];
  cpuUs: number;
  killed: boolean;
}

/** Runs the child for `seconds` (or until `killAfter` windows closed, then SIGKILL). */
function runChild(path: Path, dir: string, opts: { killAfter?: number; strace?: string }): Promise<Run> {
  const args = ['--import', 'tsx', CHILD, path.mode, dir, url, String(flushMs), String(path.sendMs)];
  if (opts.killAfter === undefined) args.push(String(seconds * 1000));
  const [cmd, argv] = opts.strace
    ? ['strace', ['-f', '-c', '-e', 'trace=fsync,fdatasync', '-o', opts.strace, process.execPath, ...args]]
    : [process.execPath, args];
  const proc = spawn(cmd, argv as string[], { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
  const run: Run = { closed: [], cpuUs: Number.NaN, killed: false };
  let buffered = '';
  proc.stdout.on('data', (c: Buffer) => {
    buffered += c.toString();
    const lines = buffered.split('\n');
    buffered = lines.pop() ?? '';
    for (const line of lines) {
      const [word, value] = line.split(' ');
      if (word === 'closed') run.closed.push(Number(value));
      if (word === 'cpu') run.cpuUs = Number(value);
    }
    if (opts.killAfter !== undefined && run.closed.length >= opts.killAfter && !run.killed) {
      run.killed = true;
      proc.kill('SIGKILL');
    }
  });
  return new Promise((resolve) => proc.on('exit', () => resolve(run)));
}

/** fsync + fdatasync calls in an `strace -c` summary. */
function syncCalls(file: string): number {
  let calls = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    const cells = line.trim().split(/\s+/);
    if (cells.at(-1) === 'fsync' || cells.at(-1) === 'fdatasync') calls += Number(cells[3]);
  }
  return calls;
}

/** Flush-window ends still in the spool in `dir`. */
async function spooledEnds(dir: string): Promise<Set<number>> {
  const ends = new Set<number>();
  const spool = await Spool.open({ dir });
  for (let batch = await spool.peek(); batch; batch = await spool.peek()) {
    for (const w of batch.windows) if (w.kind === 'flush') ends.add(Date.parse(w.end));
    await spool.ack(batch.batch_id);
  }
  await spool.close();
  return ends;
}

const hasStrace = spawnSync('strace', ['-V']).status === 0;
const rows: string[] = [];
for (const path of PATHS) {
  // CPU and requests: a clean run.
  let dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-delivery-'));
  sink.requests = 0;
  sink.ends.clear();
  const clean = await runChild(path, dir, {});
  const windows = clean.closed.length;
  const cpuPerWindowUs = clean.cpuUs / windows;
  const requestsPerWindow = sink.requests / windows;
  rmSync(dir, { recursive: true, force: true });
  // fsyncs: the same run under strace.
  let syncsPerWindow = Number.NaN;
  if (hasStrace) {
    dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-delivery-'));
    const out = join(dir, 'strace.txt');
    const traced = await runChild(path, dir, { strace: out });
    syncsPerWindow = syncCalls(out) / traced.closed.length;
    rmSync(dir, { recursive: true, force: true });
  }
  // Loss on kill -9, at points spread over a send interval.
  const losses: number[] = [];
  for (let k = 0; k < kills; k++) {
    dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-delivery-'));
    sink.ends.clear();
    const run = await runChild(path, dir, { killAfter: ratio + 1 + (k % (ratio + 1)) });
    const spooled = path.mode === 'spool' ? await spooledEnds(dir) : new Set<number>();
    losses.push(run.closed.filter((end) => !sink.ends.has(end) && !spooled.has(end)).length);
    rmSync(dir, { recursive: true, force: true });
  }
  rows.push(
    `| ${path.name} | ${cpuPerWindowUs.toFixed(0)} | ${Number.isNaN(syncsPerWindow) ? 'n/a' : syncsPerWindow.toFixed(2)} | ${requestsPerWindow.toFixed(2)} | ${Math.max(...losses)} (${losses.join(', ')}) |`,
  );
}
server.close();

process.stdout.write(
  [
    `### Delivery paths — \`test/bench/agent-delivery.ts\` (${new Date().toISOString().slice(0, 10)}, ${cpus()[0]?.model ?? 'unknown CPU'}, Node.js ${process.versions.node})`,
    '',
    `${flushMs} ms windows (a compressed clock for 10 s), 2 GPUs, ${seconds} s per run; loss over ${kills} kill -9s at spread points. Target: loss ≤ 1 window.`,
    '',
    '| path | CPU per window, µs | fsync + fdatasync per window | requests per window | windows lost on kill -9, max (each) |',
    '|---|---:|---:|---:|---|',
    ...rows,
    '',
  ].join('\n'),
);
