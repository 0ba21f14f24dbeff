import os from 'node:os';
import { defineConfig } from 'vitest/config';

/**
 * Test files that share one module graph per worker (`isolate: false`), by room. Starting a fresh
 * process and importing the SDK, DuckDB or koffi again for each of ~170 files was most of the
 * suite's time; these rooms' tests keep no state across files, so each group runs in reused
 * workers. A group never shares a worker with another (each is its own project), so module-level
 * state of one room (the fake NVML's reference count, a handler's cache) cannot leak into another.
 *
 * Isolated (a fresh worker per file): the CDK tests (each builds apps into temp folders its module
 * owns), the end-to-end and packaging tests (child processes, bundles), the ingest Lambda's
 * on-the-wire test (it loads the handler module with its cold-start caches), the architecture test.
 */
const SHARED: Readonly<Record<string, readonly string[]>> = {
  lambdas: [
    'test/lambdas/contract/**/*.test.ts',
    'test/lambdas/domain/**/*.test.ts',
    'test/lambdas/app/**/*.test.ts',
    'test/lambdas/adapters/**/*.test.ts',
    'test/lambdas/local/**/*.test.ts',
    'test/lambdas/*.test.ts',
  ],
  'lambdas-handlers': ['test/lambdas/handlers/**/*.test.ts'],
  agent: [
    'test/agent/*.test.ts',
    'test/agent/window/**/*.test.ts',
    'test/agent/config/**/*.test.ts',
    'test/agent/identity/**/*.test.ts',
    'test/agent/send/**/*.test.ts',
    'test/agent/spool/**/*.test.ts',
  ],
  'agent-nvml': ['test/agent/nvml/**/*.test.ts'],
  bin: ['test/bin/**/*.test.ts'],
  chaos: ['test/chaos/**/*.test.ts'],
};

/** Files inside a shared group that need a fresh worker anyway (module-level cold-start state). */
const ISOLATED_INSIDE_SHARED = ['test/lambdas/handlers/ingest-wire.test.ts'];

const sharedGlobs = Object.values(SHARED).flat();

export default defineConfig({
  test: {
    globalSetup: ['test/setup/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: 'forks',
    // Two workers a core: vitest's default leaves a core to itself (1 worker on 2 cores), but much
    // of the suite's time is child processes (bundles, the single executable, the CLI), sockets and
    // DuckDB I/O that leave a core idle. On the 2-core CI machine (2026-11-27, BENCHMARKS.md):
    // 1 worker 219 s, 2 workers 179 s, 3 workers 158 s, 4 workers 151 s.
    maxWorkers: os.availableParallelism() * 2,
    benchmark: { include: ['test/**/*.bench.ts'] },
    projects: [
      ...Object.entries(SHARED).map(([name, include]) => ({
        extends: true as const,
        test: { name, include: [...include], exclude: ISOLATED_INSIDE_SHARED, isolate: false },
      })),
      {
        extends: true as const,
        test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: sharedGlobs, isolate: true },
      },
      {
        extends: true as const,
        test: { name: 'isolated-in-shared-room', include: ISOLATED_INSIDE_SHARED, isolate: true },
      },
    ],
  },
});
