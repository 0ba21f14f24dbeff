import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { AGENT_BUNDLE_FILE, buildAgentBundle } from '../../agent/packaging/build-agent-bundle';
import { AGENT_SEA_EXEC_ARGV, buildAgentSea, SEA_NODE_VERSION } from '../../agent/packaging/build-agent-sea';
import { fakeNvmlPath } from '../setup/fake-nvml';
import { setup as buildTestDoubles } from '../setup/global-setup';

/**
 * The single executable agent's size and start time, beside the ESM bundle on this machine's
 * Node.js: `npx tsx test/bench/agent-sea-start.ts [--runs 10]`. Builds both into a temporary
 * folder (removed at the end), then times, `--runs` times each, wall clock from spawn to exit:
 * `--version` (start, parse, exit) and `agent --once` against the fake libnvidia-ml.so (p5 preset:
 * 8 GPUs; start, NVML open, one short window, exit). Prints a Markdown table (median and max, ms)
 * with the sizes. Needs the npm registry once (the Node.js binary; cached in dist/.sea-cache).
 */
const { values } = parseArgs({ options: { runs: { type: 'string', default: '10' } } });
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1) {
  process.stderr.write(`Expected \`--runs\` to be an integer >= 1, got \`${values.runs}\` (string)\n`);
  process.exit(2);
}

await buildTestDoubles();
const dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-sea-bench-'));
try {
  const sea = await buildAgentSea({ outDir: join(dir, 'sea'), tarball: true });
  const esm = await buildAgentBundle({ outDir: join(dir, 'esm') });
  const env = {
    PATH: '/nonexistent',
    GPU_SENTINEL_NVML_LIB: fakeNvmlPath(),
    FAKE_NVML_PRESET: 'p5',
    GPU_SENTINEL_LOG_LEVEL: 'error',
    GPU_SENTINEL_IMDS: 'off',
    GPU_SENTINEL_INSTANCE_ID: 'i-0abc12345def67890',
    GPU_SENTINEL_INSTANCE_TYPE: 'p5.48xlarge',
    GPU_SENTINEL_REGION: 'us-east-1',
  };
  const once = ['agent', '--once', '--poll-interval-ms', '100'];
  const time = (file: string, args: readonly string[]): { median: number; max: number } => {
    const ms: number[] = [];
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const r = spawnSync(file, args, { cwd: dir, env, encoding: 'utf8' });
      ms.push(performance.now() - t0);
      if (r.status !== 0)
        throw new Error(`Expected ${file} ${args.join(' ')} to exit 0, got ${r.status}: ${r.stderr}`);
    }
    ms.sort((a, b) => a - b);
    return { median: ms[Math.floor(ms.length / 2)] ?? 0, max: ms[ms.length - 1] ?? 0 };
  };
  const node = [...AGENT_SEA_EXEC_ARGV, esm.entry];
  const rows = [
    ['single executable `--version`', time(sea.executable, ['--version'])],
    [`ESM bundle on Node ${process.version} \`--version\``, time(process.execPath, [...node, '--version'])],
    ['single executable `agent --once` (8 GPUs)', time(sea.executable, once)],
    [
      `ESM bundle on Node ${process.version} \`agent --once\` (8 GPUs)`,
      time(process.execPath, [...node, ...once]),
    ],
  ] as const;
  const mib = (b: number) => (b / 1024 / 1024).toFixed(1);
  const lines = [
    `Machine: ${cpus().length} cores, ${cpus()[0]?.model ?? 'unknown CPU'}; the executable is Node.js ${SEA_NODE_VERSION}; ${runs} runs each.`,
    '',
    `Sizes: executable ${mib(sea.executableBytes)} MiB (injected bundle ${mib(sea.bundleBytes)} MiB), tarball ${mib(statSync(sea.tarball ?? '').size)} MiB; ESM entry ${mib(statSync(join(esm.outDir, AGENT_BUNDLE_FILE)).size)} MiB.`,
    '',
    '| run | median ms | max ms |',
    '|---|---|---|',
    ...rows.map(([label, t]) => `| ${label} | ${t.median.toFixed(0)} | ${t.max.toFixed(0)} |`),
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
