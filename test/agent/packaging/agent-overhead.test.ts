import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..', '..');

describe('agent overhead benchmark (test/bench/agent-overhead.ts)', () => {
  it('prints a table with the agent and the nvidia-smi rows, with numbers', () => {
    // Prepare
    const args = ['--import', 'tsx', join(ROOT, 'test', 'bench', 'agent-overhead.ts'), '--seconds', '3'];

    // Act
    const result = spawnSync(process.execPath, args, { cwd: ROOT, encoding: 'utf8' });

    // Assess
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    const rows = result.stdout.split('\n').filter((l) => l.startsWith('| ') && !l.startsWith('| approach'));
    const agent = rows.find((r) => r.startsWith('| gpu-sentinel agent'))?.split('|');
    const smi = rows
      .find((r) => r.startsWith('| nvidia-smi every poll (stand-in script): total'))
      ?.split('|');
    expect(agent).toBeDefined();
    expect(smi).toBeDefined();
    // Columns: CPU %, steady CPU %, CPU s, peak RSS MB, polls.
    for (const i of [2, 4, 5, 6]) expect(Number(agent?.[i]?.trim())).toBeGreaterThan(0);
    for (const i of [2, 4, 5, 6]) expect(Number.isFinite(Number(smi?.[i]?.trim()))).toBe(true);
    expect(result.stdout).toMatch(/One `sample\(\)` of 8 GPUs: \d+(\.\d+)? µs/);
    expect(result.stdout).toContain('stand-in');
    expect(result.stdout).toMatch(/cores, Node v\d+/);
  });
});
