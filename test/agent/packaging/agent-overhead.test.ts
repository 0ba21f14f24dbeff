import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_GLIBC_TUNABLES } from '../../../agent/packaging/build-agent-sea';

const ROOT = join(import.meta.dirname, '..', '..', '..');

/** The cells of the Markdown row starting with `prefix`, trimmed (the first cell is the label). */
function row(stdout: string, prefix: string): string[] | undefined {
  return stdout
    .split('\n')
    .find((l) => l.startsWith(prefix))
    ?.split('|')
    .slice(1, -1)
    .map((c) => c.trim());
}

/** The bench's own temp root (TMPDIR), so what it leaves is seen apart from other runs'. */
let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'gpu-sentinel-overhead-test-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('agent overhead benchmark (test/bench/agent-overhead.ts)', () => {
  it('runs the shipped bundle, reports its CPU, RSS, intervals, threads and exit, and leaves nothing behind', () => {
    // Prepare
    const args = [
      '--import',
      'tsx',
      join(ROOT, 'test', 'bench', 'agent-overhead.ts'),
      ...['--seconds', '5', '--warmup-s', '1', '--report-every-s', '2', '--flush-s', '1', '--send-s', '1'],
    ];

    // Act
    const result = spawnSync(process.execPath, args, {
      cwd: ROOT,
      encoding: 'utf8',
      env: { ...process.env, TMPDIR: tmp },
    });

    // Assess
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('the shipped bundle (`gpu-sentinel-agent.mjs agent`');
    // install.sh's flags for this Node.js: --no-turbofan from 22 on (Maglev on by default there).
    const major = Number(process.versions.node.split('.')[0]);
    expect(result.stdout).toContain(
      `run with the unit's Node flags: --max-old-space-size=64 --max-semi-space-size=1 --single-threaded --expose-gc${major >= 22 ? ' --no-turbofan' : ''};`,
    );
    expect(result.stdout).toContain(`GLIBC_TUNABLES=${AGENT_GLIBC_TUNABLES}`);
    // Columns: label, CPU % whole run, steady CPU %, CPU s, peak RSS MiB, notes.
    const agent = row(result.stdout, '| gpu-sentinel agent');
    expect(agent).toBeDefined();
    for (const i of [1, 2, 4]) expect(Number(agent?.[i])).toBeGreaterThan(0);
    expect(Number(/(\d+) batches received/.exec(agent?.[5] ?? '')?.[1])).toBeGreaterThan(0);
    const smi = row(result.stdout, '| nvidia-smi every poll (stand-in script): total');
    for (const i of [1, 3, 4]) expect(Number.isFinite(Number(smi?.[i]))).toBe(true);
    const intervals = result.stdout.split('\n').filter((l) => /^\| \d+–\d+ \|/.test(l));
    expect(intervals.length).toBeGreaterThanOrEqual(2);
    expect(result.stdout).toMatch(/\| main \| \d+\.\d{3} \|/);
    expect(result.stdout).toMatch(/One `sample\(\)` of 8 GPUs: \d+(\.\d+)? µs/);
    expect(result.stdout).toMatch(/SIGTERM: the agent exited 0 after \d+ ms/);
    expect(result.stdout).toMatch(/cores, Node v\d+/);
    // tsx keeps its compile cache there (`tsx-<uid>`); the bench itself leaves nothing.
    expect(readdirSync(tmp).filter((f) => !f.startsWith('tsx-'))).toEqual([]);
  });
});
