import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { fakeNvmlPath } from '../setup/fake-nvml';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Runs `gpu-sentinel local` as a user does (the executable in a child process) with the fake
 * `libnvidia-ml.so` as its NVML library, for 4 s as a p5.48xlarge, writing into `out`; the live
 * agent's host is `i-00000000000000000`.
 *
 * @param out - the output folder (`--out`)
 * @param fakeNvml - the fake library's settings (`FAKE_NVML_*`, see test/setup/fake-nvml.ts); the
 *   `p5` preset unless `FAKE_NVML_PRESET` says otherwise
 * @returns what the run printed on stdout
 * @throws the child's error when it exits non-zero
 */
export async function runLocalLive(out: string, fakeNvml: Record<string, string>): Promise<string> {
  const run = await promisify(execFile)(
    process.execPath,
    [
      join(ROOT, 'bin/gpu-sentinel.mjs'),
      'local',
      '--out',
      out,
      '--nvml-lib',
      fakeNvmlPath(),
      '--duration-s',
      '4',
      '--instance-type',
      'p5.48xlarge',
    ],
    {
      cwd: ROOT,
      env: { ...process.env, GPU_SENTINEL_LOG_LEVEL: 'error', FAKE_NVML_PRESET: 'p5', ...fakeNvml },
      maxBuffer: 16 * 1024 * 1024,
    },
  );
  return run.stdout;
}
