import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { build } from 'esbuild';
import {
  AGENT_BUNDLE_CHUNKS_DIR,
  AGENT_BUNDLE_FILE,
  buildAgentBundle,
} from '../../agent/packaging/build-agent-bundle';
import {
  AGENT_GLIBC_TUNABLES,
  AGENT_SEA_EXEC_ARGV,
  AGENT_SEA_FILE,
} from '../../agent/packaging/build-agent-sea';
import { fakeNvmlPath } from '../setup/fake-nvml';
import { setup as buildTestDoubles } from '../setup/global-setup';
import { benchAgentEnv, envName } from './bench-agent-env';
import { readTopFunctions } from './cpu-profile-top';
import { processCpuUs, statusKb, threadCpuUs } from './proc-stat';

/**
 * The shipped agent's own cost, against the obvious alternative, in one run:
 * `npx tsx test/bench/agent-overhead.ts [--seconds 120] [--warmup-s 60] [--report-every-s 300]
 * [--poll-ms 1000] [--flush-s 10] [--send-s 60] [--gpus 8] [--sigv4] [--extra-flags '--single-threaded-gc']
 * [--bundle dist/agent] [--sea dist/agent-x64] [--nvml-cost h200-580]` (`--bundle`: measure a bundle
 * folder already built, e.g. from another commit; `--sea`: measure the single executable of that
 * folder; `--nvml-cost`: the fake NVML spends per call what a real driver spends, `NVML_COST_MODELS`).
 *
 * The hour-long run, horizons full before the steady window opens (15 min warm-up, then an hour):
 * `npx tsx test/bench/agent-overhead.ts --seconds 4500 --warmup-s 900 --report-every-s 300`.
 *
 * The agent is the deliverable itself: `gpu-sentinel-agent.mjs agent`, built by
 * `buildAgentBundle` into a temporary folder (removed at the end) and run as its systemd unit runs
 * it (the V8 flags of the unit and the single executable, `AGENT_SEA_EXEC_ARGV`), configured
 * by environment: the fake libnvidia-ml.so (p5 preset, `--gpus` H100s), `auth none` (with `--sigv4`:
 * `auth sigv4` with static example keys in the environment, each batch signed as on a host) to a loopback
 * HTTP sink in this process (batches counted there), glibc's malloc settings of the unit
 * (`GLIBC_TUNABLES`, `AGENT_GLIBC_TUNABLES`), `imds off` with identity overrides, a
 * temporary spool; the kernel log, EFA and dcgm-exporter keep their defaults, as on a GPU host
 * without EFA or dcgm-exporter. It is measured from outside: CPU from `/proc/<pid>/stat`
 * (utime + stime, whole run and steady after `--warmup-s`), per thread from
 * `/proc/<pid>/task/<tid>/stat` over the steady window, RSS from `/proc/<pid>/status` (VmRSS every
 * second, VmHWM at the end), CPU % and RSS per `--report-every-s` interval. At the end it is sent
 * SIGTERM and must exit 0, or 1 with batches still spooled.
 *
 * Beside it, at the same time: a second agent under `--cpu-prof` (its own heap: a long profile
 * outgrows the unit's 64 MB at exit) gives the top functions by self time over the steady window,
 * mapped back to the sources through the bundle's source maps; and nvidia-smi spawned every poll
 * (`test/bench/fixtures/nvidia-smi`, a stand-in script printing the real CSV: no GPU here). After
 * the run, a small child times one `sample()` of every GPU in µs. Prints a Markdown report.
 */

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const SMI = join(HERE, 'fixtures', 'nvidia-smi');
/** The agent's budget at 1 Hz (BENCHMARKS.md, current figures against targets), by GPU count: % of one core and peak RSS in MiB (2^20 bytes, the unit of every RSS figure of this bench and of BENCHMARKS.md). */
const TARGETS: Readonly<Record<number, { cpuPercent: number; rssMb: number }>> = {
  8: { cpuPercent: 0.1, rssMb: 57 },
  64: { cpuPercent: 0.4, rssMb: 95 },
};
/** Functions listed from the CPU profile. */
const TOP_FUNCTIONS = 12;
/** How often VmRSS is read, ms. */
const RSS_EVERY_MS = 1000;
/** How long the agent may take to exit after SIGTERM (a final flush and spool write), ms. */
const EXIT_GRACE_MS = 30_000;
const MB = 1024 * 1024;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '120' },
    /** Steady state starts this many seconds after the agent starts (lazy compilation, first spool writes, horizons). */
    'warmup-s': { type: 'string', default: '60' },
    /** Length of each interval of the per-interval table, s. */
    'report-every-s': { type: 'string', default: '300' },
    'poll-ms': { type: 'string', default: '1000' },
    'flush-s': { type: 'string', default: '10' },
    'send-s': { type: 'string', default: '60' },
    /** GPUs the fake NVML exposes, 1..64 (past 8 they repeat the preset's rows). */
    gpus: { type: 'string', default: '8' },
    /** Node flags added to the unit's for the agents (e.g. `--single-threaded-gc`), to measure GC settings. */
    'extra-flags': { type: 'string', default: '' },
    /** Sign every batch (SigV4 with static example keys in the environment), as a host does with its role. */
    sigv4: { type: 'boolean', default: false },
    /** An agent bundle folder already built (e.g. from another commit) to measure instead of building one. */
    bundle: { type: 'string' },
    /**
     * Measure the single executable of this folder (`build.ts --sea`: its V8 flags are built in)
     * instead of the ESM bundle on this Node.js; the profiled agent stays the bundle (`--cpu-prof`).
     */
    sea: { type: 'string' },
    /**
     * `h200-580`: the fake NVML spends what a real H200 with driver 580.159.04 spends (see
     * `NVML_COST_MODELS`), in the measured agent, the profiled one and the `sample()` timing.
     */
    'nvml-cost': { type: 'string' },
  },
});
/**
 * The fake NVML's cost models, by `--nvml-cost` name: the fake's knobs that make it spend, per call,
 * the CPU time the real driver spends (`FAKE_NVML_CALL_COST`, the table in test/fake-nvml/fake-nvml.c),
 * hold the library's own memory (`FAKE_NVML_INIT_RSS_MB`: 18 MiB, the H200's ≈ 17.8 MiB at
 * `nvmlInit_v2`) and answer NOT_SUPPORTED for the NVLink fields (38, 45, 138, 139), as the measured
 * H200 (no NVLink peers) did: the agent then stops requesting them, as it did there.
 */
const NVML_COST_MODELS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'h200-580': {
    FAKE_NVML_CALL_COST: 'h200-580',
    FAKE_NVML_INIT_RSS_MB: '18',
    FAKE_NVML_UNSUPPORTED_FIELDS: '38,45,138,139',
  },
};
const nvmlCost = values['nvml-cost'];
if (nvmlCost !== undefined && NVML_COST_MODELS[nvmlCost] === undefined) {
  process.stderr.write(
    `Expected \`--nvml-cost\` to be one of ${Object.keys(NVML_COST_MODELS).join(', ')}, got \`${nvmlCost}\` (string)\n`,
  );
  process.exit(2);
}
/** The fake NVML's knobs of the chosen cost model; none without `--nvml-cost` (every call ≈ 1 µs). */
const nvmlCostEnv: Readonly<Record<string, string>> =
  nvmlCost === undefined ? {} : (NVML_COST_MODELS[nvmlCost] ?? {});
const seconds = Number(values.seconds);
const warmupS = Number(values['warmup-s']);
const reportEveryS = Number(values['report-every-s']);
const pollMs = Number(values['poll-ms']);
const flushS = Number(values['flush-s']);
const sendS = Number(values['send-s']);
const gpus = Number(values.gpus);
for (const [name, v, min] of [
  ['--seconds', seconds, 1],
  ['--warmup-s', warmupS, 0],
  ['--report-every-s', reportEveryS, 1],
  ['--poll-ms', pollMs, 100],
  ['--flush-s', flushS, 1],
  ['--send-s', sendS, 0],
  ['--gpus', gpus, 1],
] as const)
  if (!Number.isFinite(v) || v < min) {
    process.stderr.write(`Expected \`${name}\` to be a number >= ${min}, got \`${v}\` (number)\n`);
    process.exit(2);
  }

/**
 * The V8 flags the agent runs with as deployed: built into the single executable, and given to a
 * host's Node.js by install.sh (`AGENT_SEA_EXEC_ARGV`, one home for both), which leaves out
 * `--no-turbofan` on a Node.js older than 22 (Maglev off there): so does this bench.
 */
function unitNodeFlags(): string[] {
  const major = Number(process.versions.node.split('.')[0]);
  return AGENT_SEA_EXEC_ARGV.filter((f) => major >= 22 || f !== '--no-turbofan');
}

/** A loopback HTTP sink answering 202 to every batch and counting them. */
interface Sink {
  readonly server: Server;
  readonly url: string;
  batches: number;
  bytes: number;
}

async function startSink(): Promise<Sink> {
  const sink = { batches: 0, bytes: 0 } as Sink;
  const server = createServer((req, res) => {
    req.on('data', (d: Buffer) => {
      sink.bytes += d.length;
    });
    req.on('end', () => {
      sink.batches += 1;
      res.writeHead(202, { 'content-type': 'application/json' }).end(`{"accepted":${gpus}}`);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return Object.assign(sink, { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` });
}

/** One spawned agent and what its stderr said (the last 4 KB, for a failure's message). */
interface RunningAgent {
  readonly child: ChildProcess;
  readonly pid: number;
  readonly spoolDir: string;
  readonly exited: Promise<number | null>;
  stderrTail: string;
}

function spawnAgent(
  entry: string,
  nodeFlags: readonly string[],
  sink: Sink,
  workDir: string,
  name: string,
  executable?: string,
): RunningAgent {
  const spoolDir = join(workDir, `spool-${name}`);
  mkdirSync(spoolDir);
  const env = benchAgentEnv({
    gpus,
    endpoint: sink.url,
    sigv4: values.sigv4 === true,
    spoolDir,
    extra: {
      ...nvmlCostEnv,
      [envName('pollIntervalMs')]: String(pollMs),
      [envName('flushIntervalS')]: String(flushS),
      [envName('sendIntervalS')]: String(sendS),
    },
  });
  const child = spawn(
    executable ?? process.execPath,
    executable ? ['agent'] : [...nodeFlags, entry, 'agent'],
    {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  if (child.pid === undefined) throw new Error(`Expected the ${name} agent to start, got no pid`);
  const agent: RunningAgent = {
    child,
    pid: child.pid,
    spoolDir,
    exited: new Promise((resolve, reject) => {
      child.on('error', reject);
      child.on('exit', (code) => resolve(code));
    }),
    stderrTail: '',
  };
  child.stderr?.on('data', (d: Buffer) => {
    agent.stderrTail = (agent.stderrTail + d.toString()).slice(-4096);
  });
  return agent;
}

/** SIGTERM, then the exit code (SIGKILL and `null` after {@link EXIT_GRACE_MS}) and the ms it took. */
async function stopAgent(agent: RunningAgent): Promise<{ code: number | null; ms: number; spooled: number }> {
  const t0 = performance.now();
  agent.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([
    agent.exited,
    new Promise<null>((r) => {
      timer = setTimeout(() => {
        agent.child.kill('SIGKILL');
        r(null);
      }, EXIT_GRACE_MS);
    }),
  ]);
  clearTimeout(timer);
  return {
    code,
    ms: performance.now() - t0,
    spooled: readdirSync(agent.spoolDir, { recursive: true }).length,
  };
}

/** Bundles the helper child (sample timing, nvidia-smi) to plain Node under test/.build/bench/ (koffi resolves from the repo). */
async function bundleHelper(): Promise<string> {
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

/** What `--mode smi` of the helper prints: CPU µs of itself and its reaped children, wall and steady ms, peak RSS kB. */
interface SmiResult {
  readonly userUs: number;
  readonly systemUs: number;
  readonly childUs: number;
  readonly wallMs: number;
  /** CPU µs after the warm-up; null (NaN in JSON) when the run was shorter. */
  readonly steadyUs: number | null;
  readonly steadyMs: number | null;
  readonly vmHwmKb: number;
  readonly polls: number;
  readonly rows: number;
}

/** What `--mode sample` of the helper prints. */
interface SampleResult {
  readonly sampleMeanUs: number;
  readonly gpus: number;
}

/** Runs the helper to its end and parses its JSON line. */
function runHelper<T>(entry: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<T> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...unitNodeFlags(), entry, ...args], {
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
        reject(new Error(`helper ${args.join(' ')} exited ${code}: ${stderr.trim() || stdout.trim()}`));
      else resolve(JSON.parse(line) as T);
    });
  });
}

/** CPU and threads of the agent at one moment. */
interface Snapshot {
  readonly atMs: number;
  readonly cpuUs: number;
  readonly threads: Map<string, number>;
}

function snapshot(pid: number, t0: number): Snapshot {
  return { atMs: performance.now() - t0, cpuUs: processCpuUs(pid).ownUs, threads: threadCpuUs(pid) };
}

const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : 'n/a');
const percent = (us: number, ms: number): number => (us / 1000 / ms) * 100;
const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

await buildTestDoubles();
const workDir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-agent-overhead-'));
try {
  const bundle = values.bundle
    ? {
        entry: join(values.bundle, AGENT_BUNDLE_FILE),
        bundleBytes: statSync(join(values.bundle, AGENT_BUNDLE_FILE)).size,
        chunks: existsSync(join(values.bundle, AGENT_BUNDLE_CHUNKS_DIR))
          ? readdirSync(join(values.bundle, AGENT_BUNDLE_CHUNKS_DIR)).filter((f) => f.endsWith('.mjs'))
          : [],
      }
    : await buildAgentBundle({ outDir: join(workDir, 'agent') });
  const helper = await bundleHelper();
  const nodeFlags = [...unitNodeFlags(), ...String(values['extra-flags']).split(/\s+/).filter(Boolean)];
  const profileDir = join(workDir, 'profile');
  const [sink, profSink] = await Promise.all([startSink(), startSink()]);

  const t0 = performance.now();
  const seaExecutable = values.sea ? join(values.sea, AGENT_SEA_FILE) : undefined;
  const agent = spawnAgent(bundle.entry, nodeFlags, sink, workDir, 'measured', seaExecutable);
  const profiled = spawnAgent(
    bundle.entry,
    [
      ...nodeFlags.filter((f) => !f.startsWith('--max-old-space-size')),
      '--max-old-space-size=1024',
      '--cpu-prof',
      '--cpu-prof-dir',
      profileDir,
    ],
    profSink,
    workDir,
    'profiled',
  );
  const smiRun = runHelper<SmiResult>(
    helper,
    [
      '--mode',
      'smi',
      '--smi',
      SMI,
      '--seconds',
      String(seconds),
      '--poll-ms',
      String(pollMs),
      '--warmup-s',
      String(warmupS),
    ],
    { PATH: process.env.PATH },
  );

  // Every second: VmRSS (the interval's peak); at the warm-up's end and each interval's end: CPU and threads.
  const start = snapshot(agent.pid, t0);
  let warm: Snapshot | undefined = warmupS === 0 ? start : undefined;
  const intervals: { from: Snapshot; to: Snapshot; rssEndKb: number; rssMaxKb: number; batches: number }[] =
    [];
  let intervalStart = start;
  let intervalBatches = 0;
  let rssMaxKb = 0;
  let agentDied = false;
  void agent.exited.then(() => {
    agentDied = true;
  });
  while (performance.now() - t0 < seconds * 1000 && !agentDied) {
    await sleep(Math.min(RSS_EVERY_MS, seconds * 1000 - (performance.now() - t0)));
    if (agentDied) break;
    const rssKb = statusKb(agent.pid, 'VmRSS');
    rssMaxKb = Math.max(rssMaxKb, rssKb);
    const elapsedMs = performance.now() - t0;
    if (warm === undefined && elapsedMs >= warmupS * 1000) warm = snapshot(agent.pid, t0);
    if (elapsedMs - intervalStart.atMs >= reportEveryS * 1000 || elapsedMs >= seconds * 1000) {
      const to = snapshot(agent.pid, t0);
      intervals.push({
        from: intervalStart,
        to,
        rssEndKb: rssKb,
        rssMaxKb,
        batches: sink.batches - intervalBatches,
      });
      intervalStart = to;
      intervalBatches = sink.batches;
      rssMaxKb = 0;
    }
  }
  if (agentDied) {
    profiled.child.kill('SIGKILL');
    throw new Error(`The agent exited before the end of the run: ${agent.stderrTail.trim() || 'no stderr'}`);
  }
  const end = snapshot(agent.pid, t0);
  const vmHwmKb = statusKb(agent.pid, 'VmHWM');
  const [stop, profStop] = await Promise.all([stopAgent(agent), stopAgent(profiled)]);
  const smi = await smiRun;
  const sampling = await runHelper<SampleResult>(helper, ['--mode', 'sample'], {
    PATH: process.env.PATH,
    GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
    FAKE_NVML_PRESET: 'p5',
    FAKE_NVML_GPU_COUNT: String(gpus),
    ...nvmlCostEnv,
  });
  await Promise.all([sink, profSink].map((s) => new Promise((r) => s.server.close(r))));
  let topFunctions: string[] = [];
  try {
    topFunctions = readTopFunctions(profileDir, warm ? warmupS * 1e6 : 0, TOP_FUNCTIONS);
  } catch (error) {
    process.stderr.write(
      `profiling agent left no profile; no top functions: ${(error as Error).message.slice(0, 200)}\n`,
    );
  }

  const wholePct = percent(end.cpuUs - start.cpuUs, end.atMs - start.atMs);
  const steadyPct = warm ? percent(end.cpuUs - warm.cpuUs, end.atMs - warm.atMs) : Number.NaN;
  const peakRssMb = (vmHwmKb * 1024) / MB;
  const smiOwn = smi.userUs + smi.systemUs;
  const exitOk = stop.code === 0 || (stop.code === 1 && stop.spooled > 0);
  const { cpuPercent: targetCpu, rssMb: targetRss } = TARGETS[gpus] ?? {
    cpuPercent: Number.NaN,
    rssMb: Number.NaN,
  };
  const threadRows = [...end.threads.entries()]
    .map(([comm, us]) => [comm, us - (warm?.threads.get(comm) ?? 0)] as const)
    .sort((a, b) => b[1] - a[1])
    .map(([comm, us]) => `| ${comm} | ${fmt(warm ? percent(us, end.atMs - warm.atMs) : Number.NaN, 3)} |`);
  const cpuModel = cpus()[0]?.model ?? 'unknown CPU';
  const os = readFileSync('/proc/version', 'utf8').split(' ').slice(0, 3).join(' ');
  const lines = [
    `## Agent overhead (${new Date().toISOString()})`,
    '',
    `Machine: ${cpuModel}, ${cpus().length} cores, Node ${process.version}, ${os}. Run: ${seconds} s (steady after ${warmupS} s), poll ${pollMs} ms, flush ${flushS} s, send ${sendS} s, ${gpus} GPUs.`,
    (seaExecutable
      ? `The agent: the single executable (\`${seaExecutable} agent\`, Node.js inside, its V8 flags built in: ${AGENT_SEA_EXEC_ARGV.join(' ')}); the profiled one is the bundle on this Node.js;`
      : `The agent: the shipped bundle (\`gpu-sentinel-agent.mjs agent\`, ${fmt(bundle.bundleBytes / MB)} MiB entry + ${bundle.chunks.length} chunks), run with the unit's Node flags: ${nodeFlags.join(' ') || 'none'};`) +
      ` the unit's environment: GLIBC_TUNABLES=${AGENT_GLIBC_TUNABLES};` +
      ` NVML is the fake libnvidia-ml.so (test/fake-nvml, p5 preset: ${gpus}× H100${
        nvmlCost === undefined
          ? ', every call ≈ 1 µs'
          : `, with the cost model \`${nvmlCost}\` in the measured agent, the profiled one and the sample timing: each call spins the CPU time it took on a real H200, driver 580.159.04 (${Object.entries(
              nvmlCostEnv,
            )
              .map(([k, v]) => `${k}=${v}`)
              .join(' ')})`
      }); nvidia-smi is the stand-in test/bench/fixtures/nvidia-smi (no GPU here).`,
    'CPU % is of one core, from /proc/<pid>/stat (utime + stime, 10 ms resolution); peak RSS is VmHWM; both sides run at once, each in its own process.',
    '',
    '| approach | CPU % of one core (whole run) | steady CPU % (after warm-up) | CPU s | peak RSS MiB | notes |',
    '|---|---|---|---|---|---|',
    `| gpu-sentinel agent (${seaExecutable ? 'single executable' : 'shipped bundle'} → loopback sink${values.sigv4 ? ', SigV4-signed' : ''}), ${gpus} GPUs | ${fmt(wholePct, 3)} | ${fmt(steadyPct, 3)} | ${fmt((end.cpuUs - start.cpuUs) / 1e6, 3)} | ${fmt(peakRssMb, 1)} | ${sink.batches} batches received (${fmt(sink.bytes / 1024, 1)} KiB gzip) |`,
    `| nvidia-smi every poll (stand-in script): spawned processes | ${fmt(percent(smi.childUs, smi.wallMs), 3)} |  | ${fmt(smi.childUs / 1e6, 3)} | n/a (short-lived) | ${smi.rows ?? 0} CSV rows parsed |`,
    `| nvidia-smi every poll (stand-in script): spawning Node process | ${fmt(percent(smiOwn, smi.wallMs), 3)} |  | ${fmt(smiOwn / 1e6, 3)} | ${fmt((smi.vmHwmKb * 1024) / MB, 1)} | execFile + CSV parse, ${smi.polls} polls |`,
    `| nvidia-smi every poll (stand-in script): total | ${fmt(percent(smiOwn + smi.childUs, smi.wallMs), 3)} | ${fmt(smi.steadyUs === null || smi.steadyMs === null ? Number.NaN : percent(smi.steadyUs, smi.steadyMs), 3)} | ${fmt((smiOwn + smi.childUs) / 1e6, 3)} | ${fmt((smi.vmHwmKb * 1024) / MB, 1)} | the real nvidia-smi costs far more per run |`,
    '',
    `Agent per interval (every ${reportEveryS} s; RSS from VmRSS read every second):`,
    '',
    '| interval s | CPU % | RSS at end MiB | max RSS MiB | batches |',
    '|---|---:|---:|---:|---:|',
    ...intervals.map(
      (i) =>
        `| ${fmt(i.from.atMs / 1000, 0)}–${fmt(i.to.atMs / 1000, 0)} | ${fmt(percent(i.to.cpuUs - i.from.cpuUs, i.to.atMs - i.from.atMs), 3)} | ${fmt((i.rssEndKb * 1024) / MB, 1)} | ${fmt((i.rssMaxKb * 1024) / MB, 1)} | ${i.batches} |`,
    ),
    '',
    `One \`sample()\` of ${sampling.gpus ?? '?'} GPUs: ${fmt(sampling.sampleMeanUs ?? Number.NaN, 1)} µs (mean of 2000 calls, in a separate process after the run).`,
    '',
    'Agent steady CPU per thread (% of one core, after warm-up):',
    '',
    '| thread | CPU % |',
    '|---|---:|',
    ...threadRows,
    '',
    `Top ${TOP_FUNCTIONS} functions by self time (a second agent under \`--cpu-prof\`, ${warm ? `samples after the ${warmupS} s warm-up` : 'whole run'}; % of the busy samples, idle excluded; minified frames mapped to the sources):`,
    '',
    '| function | self % of busy |',
    '|---|---:|',
    ...topFunctions,
    '',
    `SIGTERM: the agent exited ${stop.code ?? 'not at all (killed)'} after ${fmt(stop.ms, 0)} ms with ${stop.spooled} spool files left${exitOk ? '' : ' — NOT the expected 0 (or 1 with batches still spooled)'}; the profiled agent exited ${profStop.code ?? 'not at all (killed)'}.`,
    `Targets: agent CPU < ${targetCpu}% of one core (steady state): ${steadyPct < targetCpu ? 'met' : 'NOT met'} (${fmt(steadyPct, 3)}%; whole run ${fmt(wholePct, 3)}%); peak RSS < ${targetRss} MiB: ${peakRssMb < targetRss ? 'met' : 'NOT met'} (${fmt(peakRssMb, 1)} MiB, VmHWM ${vmHwmKb} kB).`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
  if (!exitOk) {
    process.stderr.write(`The agent exited ${stop.code} on SIGTERM: ${agent.stderrTail.trim()}\n`);
    process.exitCode = 1;
  }
} finally {
  rmSync(workDir, { recursive: true, force: true });
}
