import { gzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { MAX_MERGED_BATCHES } from '../../../agent/send/merge-batches';
import {
  type Batch,
  ContractValidationError,
  type EfaWindow,
  LEGACY_MAX_EFA_PORTS_PER_BATCH,
  MAX_BODY_COMPRESSED_BYTES,
  MAX_BODY_DECOMPRESSED_BYTES,
  MAX_EFA_PORTS_PER_BATCH,
  MAX_EFA_PORTS_PER_WINDOW,
  MAX_EFA_WINDOWS_PER_BATCH,
  parseBatch,
} from '../../../lambdas/contract';
import {
  DEVICE_COUNTERS,
  P5_EFA_DEVICES,
  PORT_COUNTERS_BASE,
  PORT_COUNTERS_R2_17,
} from '../../fixtures/efa/make-sysfs';
import { ago, NOW, validBatch } from './batches';

/**
 * Bytes one EFA counter can move in a 10 s window at a p5 device's 100 Gbps, the largest delta the
 * agent sends for a real host: every counter set to it gives the widest entries of the agent's shape.
 */
const MAX_10S_BYTES = 125_000_000_000;

/**
 * `windows` 10 s windows of a p5's EFA entries, as the agent sends them: per window and device its
 * port 1 counters (EFA driver r2.17's set) and its device counters (port 0), the newest window ending at NOW.
 */
function p5Efa(windows: number): EfaWindow[] {
  const out: EfaWindow[] = [];
  for (let w = windows - 1; w >= 0; w--) {
    for (const device of P5_EFA_DEVICES) {
      const span = { start: ago(10 * (w + 1)), end: ago(10 * w), device };
      const counters = (names: readonly string[]) => Object.fromEntries(names.map((n) => [n, MAX_10S_BYTES]));
      out.push({ ...span, port: 0, deltas: counters(DEVICE_COUNTERS) });
      out.push({ ...span, port: 1, deltas: counters([...PORT_COUNTERS_BASE, ...PORT_COUNTERS_R2_17]) });
    }
  }
  return out;
}

/** The batch with `efa`, through the API's check. */
const parse = (efa: EfaWindow[]): Batch => parseBatch(JSON.parse(JSON.stringify(validBatch({ efa }))), NOW);

describe('efa[] limits', () => {
  it('are sized for the class of host: 64 entries a window (32 EFA devices × 2) for every window the agent merges', () => {
    expect(P5_EFA_DEVICES.length * 2).toBeLessThanOrEqual(MAX_EFA_PORTS_PER_WINDOW);
    expect(MAX_EFA_WINDOWS_PER_BATCH).toBeGreaterThanOrEqual(MAX_MERGED_BATCHES);
    expect(MAX_EFA_PORTS_PER_BATCH).toBe(MAX_EFA_PORTS_PER_WINDOW * MAX_EFA_WINDOWS_PER_BATCH);
    expect(MAX_EFA_PORTS_PER_BATCH).toBe(4096);
    expect(LEGACY_MAX_EFA_PORTS_PER_BATCH).toBe(64);
  });

  it('accepts a batch the previous contract accepted: one p5 window, 64 entries', () => {
    expect(parse(p5Efa(1)).efa).toHaveLength(LEGACY_MAX_EFA_PORTS_PER_BATCH);
  });

  it('accepts a minute of p5 windows (384 entries) and the limit itself (4,096), within the body limits', () => {
    // Prepare
    const minute = p5Efa(6);
    const most = p5Efa(MAX_EFA_WINDOWS_PER_BATCH);

    // Act
    const json = JSON.stringify(validBatch({ efa: most }));

    // Assess
    expect(parse(minute).efa).toHaveLength(384);
    expect(parse(most).efa).toHaveLength(MAX_EFA_PORTS_PER_BATCH);
    expect(Buffer.byteLength(json)).toBeLessThanOrEqual(MAX_BODY_DECOMPRESSED_BYTES);
    expect(gzipSync(json).length).toBeLessThanOrEqual(MAX_BODY_COMPRESSED_BYTES);
  });

  it('refuses one entry more, naming `efa` and the limit', () => {
    // Prepare
    const efa = p5Efa(MAX_EFA_WINDOWS_PER_BATCH);
    efa.push({ ...(efa[0] as EfaWindow), device: 'rdmap250s0' });

    // Act
    const error = (() => {
      try {
        parse(efa);
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    // Assess
    expect(error).toBeInstanceOf(ContractValidationError);
    expect(error).toMatchObject({ path: 'efa', message: expect.stringMatching(/<=4096/) });
  });
});
