import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import { fakeNvmlPath } from '../setup/fake-nvml';
import { setup as buildTestDoubles } from '../setup/global-setup';

/**
 * The agent's own cost, against the obvious alternative, in one run:
 * `npx tsx test/bench/agent-overhead.ts [--seconds 60] [--poll-ms 1000] [--flush-s 10] [--send-s 60] [--gpus 8]`.
 *
 * Two child processes run side by side for `--seconds` (both plain Node, bundled by esbuild):
 * 1. the real agent loop (NvmlSource on the fake libnvidia-ml.so, p5 preset, `--gpus` GPUs (8); AgentLoop;
 *    BatchBuilder; HttpSender, auth none, posting gzip batches to a loopback HTTP sink in this
 *    process), polling every `--poll-ms` and flushing every `--flush-s`;
 * 2. spawning `nvidia-smi --query-gpu=… --format=csv,noheader,nounits` every `--poll-ms` and
 *    parsing the CSV. No GPU here: `test/bench/fixtures/nvidia-smi` is a stand-in shell script
 *    printing the same CSV, far cheaper than the real binary.
 * CPU is each child's own `process.cpuUsage()` over the measured run (startup excluded) plus, for
 * nvidia-smi, the spawned processes (`cutime + cstime` of the runner); peak RSS is VmHWM; the
 * agent's steady CPU is also split per thread (`/proc/self/task`). A third child, the agent again
 * under `--cpu-prof`, gives the top functions by self time. Prints a Markdown report on stdout.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const SMI = join(HERE, 'fixtures', 'nvidia-smi');
/** The agent's budget at 1 Hz (issue 10), by GPU count: % of one core and peak RSS, MB. */
const TARGETS: Readonly<Record<number, { cpuPercent: number; rssMb: number }>> = {
  8: { cpuPercent: 0.1, rssMb: 60 },
  64: { cpuPercent: 0.4, rssMb: 100 },
};
/** Functions listed from the CPU profile. */
const TOP_FUNCTIONS = 12;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    'poll-ms': { type: 'string', default: '1000' },
    'flush-s': { type: 'string', default: '10' },
    'send-s': { type: 'string', default: '60' },
    /** GPUs the fake NVML exposes, 1..64 (past 8 they repeat the preset's rows). */
    gpus: { type: 'string', default: '8' },
    /** Node flags added to the unit's for the agent children (e.g. `--single-threaded-gc`), to measure GC settings. */
    'extra-flags': { type: 'string', default: '' },
  },
});
const seconds = Number(values.seconds);
const pollMs = Number(values['poll-ms']);
const flushS = Number(values['flush-s']);
for (const [name, v, min] of [
  ['--seconds', seconds, 1],
  ['--poll-ms', pollMs, 100],
  ['--flush-s', flushS, 1],
] as const)
  if (!Number.isFinite(v) || v < min) {
    process.stderr.write(`Expected \`${name}\` to be a number >= ${min}, got \`${v}\` (number)\n`);
    process.exit(2);
  }

/** Node flags of the systemd unit's ExecStart (e.g. `--max-old-space-size=64`): the agent runs as deployed. */
function unitNodeFlags(): string[] {
  const unit = readFileSync(join(ROOT, 'agent', 'packaging', 'gpu-sentinel-agent.service'), 'utf8');
  const exec = /^ExecStart=(.*)$/m.exec(unit)?.[1] ?? '';
  return exec.split(/\s+/).filter((t) => /^--[a-z-]+(=\S+)?$/.test(t) && !t.startsWith('--config'));
}

/** What a child prints. */
interface ChildResult {
  readonly userUs: number;
  readonly systemUs: number;
  readonly childUs: number;
  readonly wallMs: number;
  /** CPU µs after the first flush (agent) or first flush interval (smi); NaN when the run was shorter. */
  readonly steadyUs: number | null;
  readonly steadyMs: number | null;
  readonly vmHwmKb: number;
  readonly polls: number;
  readonly batches: number;
  readonly sampleMeanUs?: number;
  readonly gpus?: number;
  readonly rows?: number;
  /** Steady CPU µs per thread group, keys `thread:<comm>`. */
  readonly [thread: `thread:${string}`]: number;
}

/** Bundles the child runner to plain Node under test/.build/bench/ (koffi resolves from the repo). */
async function bundleChild(): Promise<string> {
  const out = join(ROOT, 'test', '.build', 'bench', 'agent-overhead-child.mjs');
  mkdirSync(dirname(out), { recursive: true });
  await build({
    entryPoints: [join(HERE, 'fixtures', 'agent-overhead-child.ts')],
    outfile: out,
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    external: ['koffi'],
    banner: {
      js: "import { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
    },
    logLevel: 'silent',
  });
  return out;
}

/** Runs a child to the end and parses its JSON line. */
function runChild(
  entry: string,
  nodeFlags: readonly string[],
  args: readonly string[],
  env: NodeJS.ProcessEnv,
): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...nodeFlags, entry, ...args], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
    });
    child.stderr.on('data', (d) => {
      stderr += d;
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = stdout.trim().split('\n').at(-1) ?? '';
      if (code !== 0 || !line.startsWith('{'))
        reject(new Error(`child ${args.join(' ')} exited ${code}: ${stderr.trim() || stdout.trim()}`));
      else resolve(JSON.parse(line) as ChildResult);
    });
  });
}

/** The `n` functions with the most self time in the `.cpuprofile` in `dir` (V8's format: nodes with hit counts). */
function readTopFunctions(dir: string, n: number): string[] {
  const file = readdirSync(dir).find((f) => f.endsWith('.cpuprofile'));
  if (!file) return [];
  const profile = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
    nodes: { callFrame: { functionName: string; url: string; lineNumber: number }; hitCount?: number }[];
  };
  const self = new Map<string, number>();
  let total = 0;
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === '(idle)') continue;
    total += hits;
    const where = url ? `${url.split('/').slice(-2).join('/')}:${lineNumber + 1}` : '';
    const key = `${functionName || '(anonymous)'}${where ? ` ${where}` : ''}`;
    self.set(key, (self.get(key) ?? 0) + hits);
  }
  return [...self.entries()]
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(
      ([name, hits]) =>
        `| ${name.replace(/\|/g, '\\|')} | ${((hits / Math.max(1, total)) * 100).toFixed(1)} |`,
    );
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const percent = (us: number, wallMs: number): number => (us / 1000 / wallMs) * 100;
/** Steady-state CPU %, NaN when the run ended before the first flush (JSON turns NaN into null). */
const steadyPct = (r: ChildResult): number =>
  r.steadyUs === null || r.steadyMs === null ? Number.NaN : percent(r.steadyUs, r.steadyMs);

await buildTestDoubles();
const entry = await bundleChild();

// The loopback sink: accepts every batch with 202, counts them.
let received = 0;
let receivedBytes = 0;
const sink = createServer((req, res) => {
  req.on('data', (d: Buffer) => {
    receivedBytes += d.length;
  });
  req.on('end', () => {
    received += 1;
    res.writeHead(202, { 'content-type': 'application/json' }).end('{"accepted":8}');
  });
});
await new Promise<void>((r) => sink.listen(0, '127.0.0.1', r));
const sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;

const nodeFlags = [...unitNodeFlags(), ...String(values['extra-flags']).split(/\s+/).filter(Boolean)];
const common = ['--seconds', String(seconds), '--poll-ms', String(pollMs), '--flush-s', String(flushS)];
const agentEnv = {
  PATH: process.env.PATH,
  GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
  FAKE_NVML_PRESET: 'p5',
  FAKE_NVML_GPU_COUNT: String(values.gpus),
};
const { cpuPercent: TARGET_CPU_PERCENT, rssMb: TARGET_RSS_MB } = TARGETS[Number(values.gpus)] ?? {
  cpuPercent: Number.NaN,
  rssMb: Number.NaN,
};
const agentArgs = ['--mode', 'agent', '--sink', sinkUrl, '--send-s', String(values['send-s']), ...common];
const profileDir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-agent-prof-'));
const [agent, smi] = await Promise.all([
  runChild(entry, nodeFlags, agentArgs, agentEnv),
  runChild(entry, nodeFlags, ['--mode', 'smi', '--smi', SMI, ...common], { PATH: process.env.PATH }),
  // The profile of a long run outgrows the unit's 64 MB heap when V8 writes it at exit: this child
  // gets room for it, and a failure costs only the top-functions table.
  runChild(
    entry,
    [
      ...nodeFlags.filter((f) => !f.startsWith('--max-old-space-size')),
      '--max-old-space-size=1024',
      '--cpu-prof',
      '--cpu-prof-dir',
      profileDir,
    ],
    agentArgs,
    agentEnv,
  ).catch((error: unknown) => {
    process.stderr.write(
      `profiling child failed; no top functions: ${(error as Error).message.slice(0, 200)}\n`,
    );
  }),
]);
sink.close();
const topFunctions = readTopFunctions(profileDir, TOP_FUNCTIONS);
rmSync(profileDir, { recursive: true, force: true });

const agentCpu = agent.userUs + agent.systemUs;
const smiOwn = smi.userUs + smi.systemUs;
const agentPct = percent(agentCpu, agent.wallMs);
const agentRssMb = agent.vmHwmKb / 1024;
const rows: string[][] = [
  [
    `gpu-sentinel agent (NvmlSource + AgentLoop + HttpSender → loopback sink), ${agent.gpus ?? '?'} GPUs`,
    fmt(agentPct, 3),
    fmt(steadyPct(agent), 3),
    fmt(agentCpu / 1e6, 3),
    fmt(agentRssMb, 1),
    String(agent.polls),
    `${agent.batches} batches sent, ${received} received (${(receivedBytes / 1024).toFixed(1)} KiB gzip)`,
  ],
  [
    'nvidia-smi every poll (stand-in script): spawned processes',
    fmt(percent(smi.childUs, smi.wallMs), 3),
    '',
    fmt(smi.childUs / 1e6, 3),
    'n/a (short-lived)',
    String(smi.polls),
    `${smi.rows ?? 0} CSV rows parsed`,
  ],
  [
    'nvidia-smi every poll (stand-in script): spawning Node process',
    fmt(percent(smiOwn, smi.wallMs), 3),
    '',
    fmt(smiOwn / 1e6, 3),
    fmt(smi.vmHwmKb / 1024, 1),
    String(smi.polls),
    'execFile + CSV parse',
  ],
  [
    'nvidia-smi every poll (stand-in script): total',
    fmt(percent(smiOwn + smi.childUs, smi.wallMs), 3),
    fmt(steadyPct(smi), 3),
    fmt((smiOwn + smi.childUs) / 1e6, 3),
    fmt(smi.vmHwmKb / 1024, 1),
    String(smi.polls),
    'the real nvidia-smi costs far more per run',
  ],
];
const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
const os = readFileSync('/proc/version', 'utf8').split(' ').slice(0, 3).join(' ');
const lines = [
  `## Agent overhead (${new Date().toISOString()})`,
  '',
  `Machine: ${cpuModel}, ${cpus().length} cores, Node ${process.version}, ${os}. Run: ${seconds} s, poll ${pollMs} ms, flush ${flushS} s; both sides at once, each in its own process.`,
  `NVML is the fake libnvidia-ml.so (test/fake-nvml, p5 preset: ${values.gpus}× H100); nvidia-smi is the stand-in test/bench/fixtures/nvidia-smi (no GPU here).`,
  `CPU % is of one core over the measured run (process start excluded); peak RSS is VmHWM; both children run with the unit's Node flags: ${nodeFlags.join(' ') || 'none'}. CPU times of the spawned processes come from /proc cutime+cstime, 10 ms resolution.`,
  '',
  '| approach | CPU % of one core | steady CPU % (after 1st flush) | CPU s | peak RSS MB | polls | notes |',
  '|---|---|---|---|---|---|---|',
  ...rows.map((r) => `| ${r.join(' | ')} |`),
  '',
  `One \`sample()\` of ${agent.gpus ?? '?'} GPUs: ${fmt(agent.sampleMeanUs ?? Number.NaN, 1)} µs (mean of 2000 calls after the run).`,
  '',
  'Agent steady CPU per thread (% of one core):',
  '',
  '| thread | CPU % |',
  '|---|---:|',
  ...Object.entries(agent)
    .filter(([k]) => k.startsWith('thread:'))
    .sort((a, b) => (b[1] as number) - (a[1] as number))
    .map(
      ([k, us]) =>
        `| ${k.slice('thread:'.length)} | ${fmt(percent(us as number, agent.steadyMs ?? Number.NaN), 3)} |`,
    ),
  '',
  `Top ${TOP_FUNCTIONS} functions by self time (a second agent under \`--cpu-prof\`, whole run, startup included; % of the busy samples, idle excluded):`,
  '',
  '| function | self % of busy |',
  '|---|---:|',
  ...topFunctions,
  '',
  `Targets: agent CPU < ${TARGET_CPU_PERCENT}% of one core (steady state): ${steadyPct(agent) < TARGET_CPU_PERCENT ? 'met' : 'NOT met'} (${fmt(steadyPct(agent), 3)}%; whole run ${fmt(agentPct, 3)}%); peak RSS < ${TARGET_RSS_MB} MB: ${agentRssMb < TARGET_RSS_MB ? 'met' : 'NOT met'} (${fmt(agentRssMb, 1)} MB).`,
];
process.stdout.write(`${lines.join('\n')}\n`);
