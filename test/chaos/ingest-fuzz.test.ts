import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RULE_CONTEXT } from '../../lambdas/domain';
import { GPU_METRIC_NAMES } from '../../lambdas/domain/measure-types';
import type { StateStore, TelemetryStore } from '../../lambdas/domain/ports';
import { createIngestHandler } from '../../lambdas/handlers/ingest-handler';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { NOW, validBatch } from '../lambdas/contract/batches';
import { RecordingAlertSink, RecordingDecisionSink, RecordingRemediator } from '../lambdas/handlers/fakes';
import { proxyEvent, RecordingStore, Tally } from './chaos-fixtures';
import { MemoryStateStore } from './memory-state-store';

/**
 * Requests the fuzz run sends through the real ingest handler: 2,000 in `npm test` (about 8 s), the
 * campaign's ≥ 10,000 in `npm run chaos` (which sets `GPU_SENTINEL_FUZZ_RUNS=10000`). The seed is
 * fixed, so the first 2,000 are the campaign's first 2,000.
 */
const FUZZ_RUNS = Number(process.env.GPU_SENTINEL_FUZZ_RUNS ?? 2_000);

/** Numbers at and past every bound a store or a parser has: int64, safe integers, DOUBLE's range, denormals. */
const EXTREMES = [
  0,
  -1,
  0.5,
  1,
  4096,
  65_535,
  1e-300,
  1e21,
  2 ** 53 - 1,
  2 ** 53,
  2 ** 63,
  1e308,
  Number.MAX_VALUE,
] as const;

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/** Every path (list of keys) in a JSON value, for mutations that hit any field. */
function pathsOf(value: Json, prefix: (string | number)[] = []): (string | number)[][] {
  if (value === null || typeof value !== 'object') return [prefix];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return [
    prefix,
    ...keys.flatMap((k) => pathsOf((value as Record<string, Json>)[k] as Json, [...prefix, k])),
  ];
}

const BASE = JSON.parse(JSON.stringify(validBatch())) as Json;
const PATHS = pathsOf(BASE).filter((p) => p.length > 0);

const mutation = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      kind: fc.constant('extreme' as const),
      gpu: fc.integer({ min: 0, max: 7 }),
      name: fc.constantFrom(...GPU_METRIC_NAMES),
      value: fc.constantFrom(...EXTREMES),
    }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('replace' as const),
      path: fc.nat(PATHS.length - 1),
      value: fc.jsonValue({ maxDepth: 2 }) as fc.Arbitrary<Json>,
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('delete' as const), path: fc.nat(PATHS.length - 1) }),
  },
  {
    weight: 2,
    arbitrary: fc.record({
      kind: fc.constant('xid' as const),
      code: fc.integer({ min: 0, max: 1000 }),
      gpu: fc.integer({ min: 0, max: 7 }),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('impostor' as const),
      instanceId: fc.constantFrom('i-0bbbbbbbbbbbbbbb2', 'i-0123abcd', 'i-0a5e00000000000a2'),
    }),
  },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('efa' as const),
      deltas: fc.dictionary(
        fc.constantFrom('rx_drops', 'rx_bytes', 'tx_bytes', 'retrans_pkts'),
        fc.constantFrom(...EXTREMES),
      ),
    }),
  },
);

type Mutation = typeof mutation extends fc.Arbitrary<infer M> ? M : never;

/** A plain JSON object, or undefined. */
function obj(value: Json | undefined): Record<string, Json> | undefined {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value : undefined;
}

function apply(batch: Record<string, Json>, m: Mutation): void {
  switch (m.kind) {
    case 'extreme': {
      const windows = Array.isArray(batch.windows) ? batch.windows : [];
      const metrics = obj(obj(windows[m.gpu])?.metrics);
      if (metrics) metrics[m.name] = m.value;
      return;
    }
    case 'xid': {
      const event = {
        at: '2026-11-21T09:59:58.000Z',
        kind: 'xid',
        xid: m.code,
        source: 'kmsg',
        pci_bus_id: `0000:${(0x19 + m.gpu * 0x11).toString(16)}:00.0`,
      };
      batch.events = [...(Array.isArray(batch.events) ? batch.events : []), event];
      return;
    }
    case 'impostor': {
      const host = obj(batch.host);
      if (host) host.instance_id = m.instanceId;
      return;
    }
    case 'efa':
      batch.efa = [
        {
          start: '2026-11-21T09:59:50Z',
          end: '2026-11-21T10:00:00Z',
          device: 'rdmap16s27',
          port: 1,
          deltas: m.deltas,
        },
      ];
      return;
    default: {
      const path = PATHS[m.path] ?? [];
      let parent: Json = batch;
      for (const key of path.slice(0, -1)) parent = (parent as Record<string, Json>)?.[key] as Json;
      if (parent === null || typeof parent !== 'object') return;
      const last = path.at(-1) as string;
      if (m.kind === 'delete') delete (parent as Record<string, Json>)[last];
      else (parent as Record<string, Json>)[last] = m.value;
    }
  }
}

/** A request body: a mutated batch (most), any JSON, raw bytes (gzip or not), or a body past the 8 MiB limit. */
const request = fc.oneof(
  {
    weight: 1,
    arbitrary: fc.record({ kind: fc.constant('huge' as const), mib: fc.integer({ min: 9, max: 12 }) }),
  },
  {
    weight: 160,
    arbitrary: fc.record({
      kind: fc.constant('batch' as const),
      mutations: fc.array(mutation, { minLength: 0, maxLength: 3 }),
    }),
  },
  {
    weight: 10,
    arbitrary: fc.record({ kind: fc.constant('json' as const), value: fc.jsonValue({ maxDepth: 3 }) }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      kind: fc.constant('bytes' as const),
      bytes: fc.uint8Array({ maxLength: 96 }),
      gzip: fc.boolean(),
    }),
  },
);

/** The real ingest handler on `store` and `state`, with recording sinks, `replace` mode and the test clock. */
function fuzzHandler(store: TelemetryStore, state: StateStore) {
  return createIngestHandler({
    store,
    state,
    alerts: new RecordingAlertSink(),
    decisions: new RecordingDecisionSink(),
    remediator: new RecordingRemediator(),
    log: { info: () => undefined, warn: () => undefined, error: () => undefined },
    remediationMode: 'replace',
    dryRun: false,
    rules: DEFAULT_RULE_CONTEXT,
    clock: () => NOW,
  });
}

describe('chaos: fuzzed batches through the real ingest handler', () => {
  it(`answers ${FUZZ_RUNS} fuzzed requests with no 5xx but the injected store faults, and never writes part of a batch`, async () => {
    // Prepare
    const store = new RecordingStore();
    const state = new MemoryStateStore();
    const handler = fuzzHandler(store, state);
    const statuses = new Tally();
    let partial = 0;
    let runs = 0;
    const stateSize = () =>
      [...state.broken.values()].reduce((n, m) => n + m.size, 0) +
      state.claims.size +
      state.remediations.size;

    // Act
    await fc.assert(
      fc.asyncProperty(request, fc.integer({ min: 0, max: 19 }), async (req, dice) => {
        runs += 1;
        let body: Buffer | Json;
        let flushWindows = -1;
        if (req.kind === 'batch') {
          const batch = structuredClone(BASE) as Record<string, Json>;
          for (const m of req.mutations) apply(batch, m);
          body = batch;
          if (Array.isArray(batch.windows))
            flushWindows = batch.windows.filter((w) => (w as { kind?: Json })?.kind === 'flush').length;
        } else if (req.kind === 'huge') {
          const batch = structuredClone(BASE) as Record<string, Json>;
          batch.padding = 'x'.repeat(req.mib * 1024 * 1024);
          body = batch;
        } else if (req.kind === 'json') body = Buffer.from(JSON.stringify(req.value));
        else body = req.gzip ? gzipSync(req.bytes) : Buffer.from(req.bytes);
        const injected = dice === 0;
        store.failNext = injected;
        const writesBefore = store.writes.length;
        const stateBefore = stateSize();

        const res = await handler(proxyEvent(body, { gzip: req.kind !== 'bytes' }));

        statuses.add(injected && res.statusCode === 503 ? '503-injected' : res.statusCode);
        store.failNext = false;
        if (res.statusCode === 202) {
          const written = store.writes.at(-1);
          const whole = store.writes.length === writesBefore + 1 && written?.gpu.length === flushWindows;
          if (!whole) partial += 1;
          return whole;
        }
        const untouched = store.writes.length === writesBefore && stateSize() === stateBefore;
        if (!untouched) partial += 1;
        return untouched && (res.statusCode < 500 || (injected && res.statusCode === 503));
      }),
      { numRuns: FUZZ_RUNS, seed: 20_261_123 },
    );

    // Assess
    console.log(`chaos ingest fuzz: ${runs} requests, by status: ${statuses}; partial writes: ${partial}`);
    expect(runs).toBeGreaterThanOrEqual(FUZZ_RUNS);
    expect(partial).toBe(0);
    expect(statuses.get(500)).toBe(0);
    expect(statuses.get(503)).toBe(0);
    expect(statuses.get(202)).toBeGreaterThan(FUZZ_RUNS / 10);
  }, 300_000);

  it('stores every contract-valid extreme number in the embedded DuckDB store: no write fails forever', async () => {
    // Prepare
    const store = await DuckDbStore.open(':memory:');
    const handler = fuzzHandler(store, new MemoryStateStore());
    const statuses = new Tally();
    const extreme = mutation.filter((m) => m.kind === 'extreme' || m.kind === 'efa');

    // Act
    try {
      await fc.assert(
        fc.asyncProperty(fc.array(extreme, { minLength: 1, maxLength: 4 }), async (mutations) => {
          const batch = structuredClone(BASE) as Record<string, Json>;
          for (const m of mutations) apply(batch, m);
          const res = await handler(proxyEvent(batch));
          statuses.add(res.statusCode);
          return res.statusCode === 202 || res.statusCode === 400;
        }),
        { numRuns: 300, seed: 20_261_123 },
      );
    } finally {
      await store.close();
    }

    // Assess
    console.log(`chaos extreme numbers into DuckDB: by status: ${statuses}`);
    expect(statuses.get(202)).toBeGreaterThan(0);
  }, 300_000);
});
