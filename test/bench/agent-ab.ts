import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { AGENT_BUNDLE_FILE, buildAgentBundle } from '../../agent/packaging/build-agent-bundle';
import { AGENT_SEA_EXEC_ARGV } from '../../agent/packaging/build-agent-sea';
import { setup as buildTestDoubles } from '../setup/global-setup';
import { benchAgentEnv } from './bench-agent-env';
import { readTopFunctions } from './cpu-profile-top';
import { statusKb } from './proc-stat';

/**
 * Two agent bundles side by side, at the same time, so they share the machine's load: the A/B of a
 * change to the agent's CPU on a shared machine, where one agent's figure moves with the other
 * builds' load by more than the change.
 * `npx tsx test/bench/agent-ab.ts --base /tmp/agent-main [--new <bundle dir>] [--gpus 64]
 * [--seconds 180] [--warmup-s 60] [--every-s 30] [--no-sigv4]`
 *
 * `--base` and `--new` are bundle folders as `buildAgentBundle` writes them (build the baseline
 * from another commit into /tmp); without `--new` this tree's bundle is built into a temporary
 * folder. Both run on the Node.js 24 of `node_modules/node` (the single executable's Node.js) with
 * the unit's V8 flags (`AGENT_SEA_EXEC_ARGV`) and malloc settings (`AGENT_GLIBC_TUNABLES`), the fake
 * libnvidia-ml.so (p5 preset, `--gpus` H100s), SigV4-signed by default, each to its own loopback
 * sink and spool. CPU from the scheduler's run time of every thread (`/proc/<pid>/task/<tid>/schedstat`,
 * ns) at the warm-up's end and every `--every-s`; prints each side's steady CPU % of one core per interval and overall, the ratio
 * new / base (the figure to read: < 1 is a saving), and each side's peak RSS (VmHWM).
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
/** Node.js 24, the runtime of the single executable (the `node` npm package). */
const NODE24 = join(ROOT, 'node_modules', 'node', 'bin', 'node');
const MB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    base: { type: 'string' },
    new: { type: 'string' },
    gpus: { type: 'string', default: '64' },
    seconds: { type: 'string', default: '180' },
    'warmup-s': { type: 'string', default: '60' },
    'every-s': { type: 'string', default: '30' },
    'no-sigv4': { type: 'boolean', default: false },
    /** Also run the new bundle a third time under `--cpu-prof` and list its top functions by self time (steady window). */
    profile: { type: 'boolean', default: false },
  },
});
const gpus = Number(values.gpus);
const seconds = Number(values.seconds);
const warmupS = Number(values['warmup-s']);
const everyS = Number(values['every-s']);
if (values.base === undefined) {
  process.stderr.write('Expected `--base <bundle folder>`, got none\n');
  process.exit(2);
}
for (const [name, v, min] of [
  ['--gpus', gpus, 1],
  ['--seconds', seconds, 1],
  ['--warmup-s', warmupS, 0],
  ['--every-s', everyS, 1],
] as const)
  if (!Number.isFinite(v) || v < min || (name === '--warmup-s' && v >= seconds)) {
    process.stderr.write(`Expected \`${name}\` to be a number >= ${min} (warm-up < seconds), got \`${v}\`\n`);
    process.exit(2);
  }

interface Side {
  readonly name: string;
  readonly child: ChildProcess;
  readonly pid: number;
  readonly server: Server;
  batches: number;
  stderrTail: string;
}

async function startSide(
  name: string,
  bundleDir: string,
  workDir: string,
  extraFlags: readonly string[] = [],
): Promise<Side> {
  let batches = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      batches += 1;
      res.writeHead(202, { 'content-type': 'application/json' }).end(`{"accepted":${gpus}}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const spoolDir = join(workDir, `spool-${name}`);
  mkdirSync(spoolDir);
  const sigv4 = !values['no-sigv4'];
  const flags =
    extraFlags.length === 0
      ? AGENT_SEA_EXEC_ARGV
      : AGENT_SEA_EXEC_ARGV.filter((f) => !f.startsWith('--max-old'));
  const child = spawn(NODE24, [...flags, ...extraFlags, join(bundleDir, AGENT_BUNDLE_FILE), 'agent'], {
    env: benchAgentEnv({
      gpus,
      endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      sigv4,
      spoolDir,
    }),
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (child.pid === undefined) throw new Error(`Expected the ${name} agent to start, got no pid`);
  const side: Side = {
    name,
    child,
    pid: child.pid,
    server,
    get batches() {
      return batches;
    },
    stderrTail: '',
  };
  child.stderr?.on('data', (d: Buffer) => {
    side.stderrTail = (side.stderrTail + d.toString()).slice(-4096);
  });
  return side;
}

/**
 * CPU time of a process, µs, from the scheduler's per-thread run time (`/proc/<pid>/task/<tid>/schedstat`,
 * first field, ns): exact where `/proc/<pid>/stat` counts 10 ms ticks, which at 0.1 % of a core is
 * a tick every 10 s. Threads that ended are not counted (the agent's live for its whole run).
 */
function schedCpuUs(pid: number): number {
  let ns = 0;
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      // the thread ended meanwhile
    }
  }
  return ns / 1000;
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pct = (us: number, ms: number): number => (us / 1000 / ms) * 100;

await buildTestDoubles();
const workDir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-agent-ab-'));
const sides: Side[] = [];
try {
  let newDir = values.new;
  if (newDir === undefined) {
    newDir = join(workDir, 'agent');
    await buildAgentBundle({ outDir: newDir });
  }
  sides.push(await startSide('base', values.base, workDir), await startSide('new', newDir, workDir));
  const profileDir = join(workDir, 'profile');
  if (values.profile)
    sides.push(
      await startSide('profiled', newDir, workDir, [
        '--max-old-space-size=1024',
        '--cpu-prof',
        '--cpu-prof-dir',
        profileDir,
      ]),
    );
  const t0 = performance.now();
  const marks: { atMs: number; cpu: number[] }[] = [];
  const mark = (): void => {
    marks.push({ atMs: performance.now() - t0, cpu: sides.map((s) => schedCpuUs(s.pid)) });
  };
  await sleep(warmupS * 1000);
  mark();
  const load = [loadavg()[0] ?? Number.NaN];
  while (performance.now() - t0 < seconds * 1000) {
    await sleep(Math.min(everyS * 1000, seconds * 1000 - (performance.now() - t0)));
    for (const s of sides)
      if (s.child.exitCode !== null) throw new Error(`The ${s.name} agent exited: ${s.stderrTail.trim()}`);
    mark();
    load.push(loadavg()[0] ?? Number.NaN);
  }
  const hwm = sides.map((s) => (statusKb(s.pid, 'VmHWM') * 1024) / MB);
  const first = marks[0]!;
  const last = marks.at(-1)!;
  const steady = sides.map((_, i) => pct(last.cpu[i]! - first.cpu[i]!, last.atMs - first.atMs));
  const top = values.profile
    ? await (async () => {
        const profiled = sides.pop() as Side;
        profiled.child.kill('SIGTERM');
        await new Promise((r) => profiled.child.once('exit', r));
        profiled.server.close();
        return readTopFunctions(profileDir, warmupS * 1e6, 30);
      })()
    : [];
  const rows = marks.slice(1).map((m, k) => {
    const prev = marks[k]!;
    const [b, n] = sides.map((_, i) => pct(m.cpu[i]! - prev.cpu[i]!, m.atMs - prev.atMs));
    return `| ${(prev.atMs / 1000).toFixed(0)}–${(m.atMs / 1000).toFixed(0)} | ${b!.toFixed(3)} | ${n!.toFixed(3)} | ${(n! / b!).toFixed(2)} |`;
  });
  const lines = [
    `## Agent A/B (${new Date().toISOString()}): ${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, load average ${Math.min(...load).toFixed(1)}–${Math.max(...load).toFixed(1)}`,
    `${gpus} GPUs, ${seconds} s, steady after ${warmupS} s, ${values['no-sigv4'] ? 'unsigned' : 'SigV4-signed'}; base ${values.base}, new ${values.new ?? 'this tree'}`,
    '',
    '| interval s | base CPU % | new CPU % | new / base |',
    '|---|---:|---:|---:|',
    ...rows,
    `| **steady** | **${steady[0]!.toFixed(3)}** | **${steady[1]!.toFixed(3)}** | **${(steady[1]! / steady[0]!).toFixed(3)}** |`,
    '',
    `Peak RSS (VmHWM): base ${hwm[0]!.toFixed(1)} MiB, new ${hwm[1]!.toFixed(1)} MiB; batches received: base ${sides[0]!.batches}, new ${sides[1]!.batches}.`,
    ...(top.length === 0
      ? []
      : [
          '',
          'The new bundle under `--cpu-prof`, self time after the warm-up:',
          '',
          '| function | self % of busy |',
          '|---|---:|',
          ...top,
        ]),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  for (const s of sides) {
    s.child.kill('SIGTERM');
    s.server.close();
  }
  await sleep(3000);
  for (const s of sides) if (s.child.exitCode === null) s.child.kill('SIGKILL');
  rmSync(workDir, { recursive: true, force: true });
}
