import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { BatchBuilder } from '../../../agent/send/batcher';
import {
  type AgentInfo,
  type GpuEvent,
  type GpuWindow,
  type Host,
  LAMBDA_SYNC_MAX_PAYLOAD_BYTES,
  MAX_BODY_DECOMPRESSED_BYTES,
  MAX_EFA_PORTS_PER_BATCH,
  MAX_EVENTS_PER_BATCH,
  MAX_WINDOWS_PER_BATCH,
  parseBatch,
} from '../../../lambdas/contract';
import { decodeJsonBody } from '../../../lambdas/handlers/http-body';
import { toProxyEvent } from '../../../lambdas/local/api-gateway-event';

const NOW = new Date('2026-03-10T12:00:00Z');
const HOST: Host = { instance_id: 'i-0a5e00000000000a1', instance_type: 'p5.48xlarge', region: 'us-east-1' };
const AGENT: AgentInfo = { version: '0.1.0', profiling_source: 'none' };

function windowsAt(endOffsetS: number, gpus: number, extra: Record<string, unknown> = {}): GpuWindow[] {
  const end = new Date(NOW.getTime() - endOffsetS * 1000);
  const start = new Date(end.getTime() - 10_000);
  return Array.from({ length: gpus }, (_, index) => ({
    kind: 'flush' as const,
    start: start.toISOString(),
    end: end.toISOString(),
    gpu: { index, name: 'NVIDIA H100 80GB HBM3', ...extra },
    metrics: { power_w: 67, gpu_util: 0 },
  }));
}

function events(n: number): GpuEvent[] {
  return Array.from({ length: n }, (_, i) => ({
    at: new Date(NOW.getTime() - i * 1000).toISOString(),
    kind: 'xid' as const,
    xid: 13,
    source: 'kmsg' as const,
  }));
}

function counter(): () => string {
  let n = 0;
  return () => `00000000-0000-4000-8000-${(n++).toString(16).padStart(12, '0')}`;
}

describe('BatchBuilder', () => {
  it('builds one batch with seq, batch_id and sent_at from the injected sources', () => {
    // Prepare
    const builder = new BatchBuilder({ startSeq: 41, randomUUID: counter(), clock: () => NOW });

    // Act
    const batches = builder.build({ host: HOST, agent: AGENT, windows: windowsAt(0, 8) });

    // Assess
    expect(batches).toHaveLength(1);
    expect(batches[0]).toMatchObject({
      schema: 'gpu-sentinel/v1',
      seq: 41,
      batch_id: '00000000-0000-4000-8000-000000000000',
      sent_at: NOW.toISOString(),
    });
    expect(batches[0]?.events).toBeUndefined();
    expect(builder.nextSeq).toBe(42);
    expect(() => parseBatch(batches[0], NOW)).not.toThrow();
  });

  it('keeps seq monotonic across calls', () => {
    // Prepare
    const builder = new BatchBuilder({ clock: () => NOW });

    // Act
    const first = builder.build({ host: HOST, agent: AGENT, windows: windowsAt(10, 2) });
    const second = builder.build({ host: HOST, agent: AGENT, windows: windowsAt(0, 2) });

    // Assess
    expect([...first, ...second].map((b) => b.seq)).toEqual([0, 1]);
    expect(first[0]?.batch_id).not.toBe(second[0]?.batch_id);
  });

  it.each([
    [
      'windows over the count limit',
      {
        windows: [...windowsAt(30, 64), ...windowsAt(20, 64), ...windowsAt(10, 64)].flatMap((w) => [w, w, w]),
      },
    ],
    ['events over the count limit', { windows: windowsAt(0, 8), events: events(600) }],
    [
      'EFA ports over the count limit',
      {
        windows: [],
        efa: Array.from({ length: MAX_EFA_PORTS_PER_BATCH + 36 }, (_, i) => ({
          start: new Date(NOW.getTime() - 10_000).toISOString(),
          end: NOW.toISOString(),
          device: `rdmap${i}s0`,
          port: 1,
          deltas: { rx_drops: 0 },
        })),
      },
    ],
    [
      'windows over the byte limit',
      {
        windows: Array.from({ length: 60 }, (_, i) =>
          windowsAt(i * 10, 8, { serial: 'x'.repeat(60) }),
        ).flat(),
      },
    ],
  ])('splits %s into batches that each pass the contract', (_case, input) => {
    // Prepare
    const builder = new BatchBuilder({ clock: () => NOW, maxBatchBytes: 64 * 1024 });

    // Act
    const batches = builder.build({ host: HOST, agent: AGENT, ...input });

    // Assess
    expect(batches.length).toBeGreaterThan(1);
    for (const batch of batches) {
      expect(() => parseBatch(JSON.parse(JSON.stringify(batch)), NOW)).not.toThrow();
      expect(Buffer.byteLength(JSON.stringify(batch))).toBeLessThanOrEqual(64 * 1024);
    }
    const total = (k: 'windows' | 'events' | 'efa') => batches.reduce((n, b) => n + (b[k]?.length ?? 0), 0);
    expect(total('windows')).toBe(input.windows.length);
    expect(total('events')).toBe('events' in input ? input.events.length : 0);
    expect(total('efa')).toBe('efa' in input ? input.efa.length : 0);
    expect(batches.map((b) => b.seq)).toEqual(batches.map((_, i) => i));
  });

  it('keeps all windows of one window end in the same batch', () => {
    // Prepare: 3 ends × 200 windows; two ends never fit in one batch of 512
    const builder = new BatchBuilder({ clock: () => NOW });
    const ends = [30, 20, 10].map((s) => windowsAt(s, 50).flatMap((w) => [w, w, w, w]));

    // Act
    const batches = builder.build({ host: HOST, agent: AGENT, windows: ends.flat() });

    // Assess
    expect(batches.map((b) => b.windows.length)).toEqual([400, 200]);
    for (const batch of batches) expect(batch.windows.length).toBeLessThanOrEqual(MAX_WINDOWS_PER_BATCH);
    const endsPerBatch = batches.map((b) => new Set(b.windows.map((w) => w.end)).size);
    expect(endsPerBatch).toEqual([2, 1]);
  });

  it('puts events into the earliest batches', () => {
    // Prepare
    const builder = new BatchBuilder({ clock: () => NOW });

    // Act
    const batches = builder.build({
      host: HOST,
      agent: AGENT,
      windows: windowsAt(0, 8),
      events: events(300),
    });

    // Assess
    expect(batches.map((b) => b.events?.length)).toEqual([MAX_EVENTS_PER_BATCH, 300 - MAX_EVENTS_PER_BATCH]);
    expect(batches[1]?.windows).toEqual([]);
  });

  it('builds one batch of events when there are no windows, and none for nothing', () => {
    // Prepare
    const builder = new BatchBuilder({ clock: () => NOW });

    // Act
    const withEvents = builder.build({ host: HOST, agent: AGENT, windows: [], events: events(3) });
    const empty = builder.build({ host: HOST, agent: AGENT, windows: [] });

    // Assess
    expect(withEvents).toHaveLength(1);
    expect(withEvents[0]?.windows).toEqual([]);
    expect(() => parseBatch(withEvents[0], NOW)).not.toThrow();
    expect(empty).toEqual([]);
  });

  it('takes sent_at from the input when given', () => {
    // Prepare
    const builder = new BatchBuilder({ clock: () => NOW });
    const sentAt = new Date(NOW.getTime() - 60_000);

    // Act
    const [batch] = builder.build({ host: HOST, agent: AGENT, windows: windowsAt(60, 1), sentAt });

    // Assess
    expect(batch?.sent_at).toBe(sentAt.toISOString());
  });

  it.each([
    [{ startSeq: -1 }, /startSeq/],
    [{ startSeq: 1.5 }, /startSeq/],
    [{ maxBatchBytes: 10 }, /maxBatchBytes/],
    [{ maxBatchBytes: MAX_BODY_DECOMPRESSED_BYTES + 1 }, /maxBatchBytes.*decompressed limit/],
  ])('throws on bad options %o', (opts, message) => {
    // Prepare / Act / Assess
    expect(() => new BatchBuilder(opts)).toThrow(message);
  });

  it('splits the largest contract-valid flush into batches that each reach the Lambda through API Gateway', () => {
    // Prepare: 512 windows with long serials and 256 events with 1 KiB details, at the API's own limit
    const builder = new BatchBuilder({ clock: () => NOW, maxBatchBytes: MAX_BODY_DECOMPRESSED_BYTES });
    const detailed = events(MAX_EVENTS_PER_BATCH).map((e) => ({ ...e, detail: '"'.repeat(1024) }));
    const windows = Array.from({ length: 64 }, (_, i) =>
      windowsAt(i * 10, 8, { serial: 'x'.repeat(64) }),
    ).flat();
    // Act
    const batches = builder.build({ host: HOST, agent: AGENT, windows, events: detailed });
    // Assess: each batch, gzip as the agent sends it, becomes one Lambda event under 6 MB and decodes
    for (const batch of batches) {
      const json = JSON.stringify(batch);
      expect(Buffer.byteLength(json)).toBeLessThanOrEqual(MAX_BODY_DECOMPRESSED_BYTES);
      const outcome = toProxyEvent({
        method: 'POST',
        path: '/v1/batches',
        headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
        body: gzipSync(json),
      });
      if (outcome.kind !== 'event') throw new Error(`API Gateway answered ${outcome.result.statusCode}`);
      expect(Buffer.byteLength(JSON.stringify(outcome.event))).toBeLessThanOrEqual(
        LAMBDA_SYNC_MAX_PAYLOAD_BYTES,
      );
      expect(() => parseBatch(decodeJsonBody(outcome.event), NOW)).not.toThrow();
    }
  });
});
