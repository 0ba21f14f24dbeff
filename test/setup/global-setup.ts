import { execFileSync } from 'node:child_process';
import { mkdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fakeNvmlPath } from './fake-nvml';

/** Repository root, from this file's place in `test/setup/`. */
const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The fake NVML's source. */
const FAKE_NVML_SOURCE = join(ROOT, 'test', 'fake-nvml', 'fake-nvml.c');

/** Modification time in ms, or -1 when the file is missing. */
function mtimeMs(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

/**
 * Compiles `source` into the shared library `output` with gcc, only when `output` is missing
 * or older than `source`.
 *
 * @param source - C file
 * @param output - `.so` to write; its folder is created
 * @param defines - extra `-D` macros
 * @throws {Error} when gcc fails (its stderr is in the message)
 */
function buildSharedLibrary(source: string, output: string, defines: readonly string[]): void {
  if (mtimeMs(output) >= mtimeMs(source)) return;
  mkdirSync(dirname(output), { recursive: true });
  execFileSync(
    'gcc',
    ['-shared', '-fPIC', '-O2', '-pthread', '-Wall', ...defines.map((d) => `-D${d}`), '-o', output, source],
    {
      stdio: ['ignore', 'inherit', 'inherit'],
    },
  );
}

/**
 * Vitest global setup: builds the test doubles that need a compiler before any test runs.
 * Each builder is idempotent and writes under test/.build/ (git-ignored).
 *
 * Builds the fake NVML twice: `test/.build/libnvidia-ml.so.1` (every symbol) and
 * `test/.build/legacy/libnvidia-ml.so.1` (`-DFAKE_NVML_LEGACY`: the newest `_v2` symbols missing).
 *
 * @throws {Error} when gcc is missing or the fake does not compile
 */
export async function setup(): Promise<void> {
  buildSharedLibrary(FAKE_NVML_SOURCE, fakeNvmlPath('current'), []);
  buildSharedLibrary(FAKE_NVML_SOURCE, fakeNvmlPath('legacy'), ['FAKE_NVML_LEGACY']);
}
