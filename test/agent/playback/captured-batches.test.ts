import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CapturedBatchesError } from '../../../agent/errors';
import { parseCapturedBatches } from '../../../agent/playback/captured-batches';

const H200 = readFileSync(
  fileURLToPath(new URL('../../fixtures/captured/h200-driver-580.159.04/batches.jsonl', import.meta.url)),
  'utf8',
);
const LINES = H200.split('\n').filter((l) => l.trim() !== '');
/** The first captured body, as the stub kept it. */
const FIRST = JSON.parse(LINES[0] ?? '{}') as { received_ms: number; batch: Record<string, unknown> };

describe('parseCapturedBatches', () => {
  it('reads the stub records of a real capture: one reading per flush window, in time order, and the agent it came from', () => {
    // Act
    const parsed = parseCapturedBatches(H200);

    // Assess
    expect(parsed.windows).toHaveLength(20);
    expect(parsed.windows.every((w) => w.length === 1 && w[0]?.gpu.name === 'NVIDIA H200')).toBe(true);
    expect(parsed.windows[4]?.[0]?.metrics.tensor_active).toBeCloseTo(0.9286, 4);
    expect(parsed.agent).toEqual({
      profiling_source: 'gpm',
      driver_version: '580.159.04',
      nvml_version: '13.580.159.04',
      cuda_version: '13.0',
    });
  });

  it('reads bare batches too, judged at their sent_at', () => {
    // Act
    const parsed = parseCapturedBatches(`${JSON.stringify(FIRST.batch)}\n\n`);

    // Assess
    expect(parsed.windows).toHaveLength(1);
    expect(parsed.windows[0]?.[0]?.labels).toEqual({});
  });

  it('keeps a window’s pod as the workload labels a scrape would carry', () => {
    // Prepare
    const batch = structuredClone(FIRST.batch) as { windows: Array<Record<string, unknown>> };
    for (const w of batch.windows) w.k8s = { namespace: 'ml', pod: 'train-0', container: 'main' };

    // Act
    const parsed = parseCapturedBatches(JSON.stringify(batch));

    // Assess
    expect(parsed.windows[0]?.[0]?.labels).toEqual({ namespace: 'ml', pod: 'train-0', container: 'main' });
  });

  it.each([
    ['a line that is not JSON', `${LINES[0]}\n{ nope`, 2, /expected a JSON object/],
    ['a line that is not an object', '42', 1, /expected a JSON object/],
    ['a batch the contract refuses', `${LINES[0]}\n${LINES[1]?.replace('"seq": 1', '"seq": -1')}`, 2, /seq/],
    [
      'a MIG slice window',
      JSON.stringify({
        ...FIRST,
        batch: {
          ...FIRST.batch,
          windows: (FIRST.batch.windows as Array<Record<string, unknown>>).map((w) => ({
            ...w,
            gpu_instance_id: 1,
            gpu_instance_profile: '1g.18gb',
          })),
        },
      }),
      1,
      /MIG slice/,
    ],
    ['a file with no batch', '\n\n', 3, /found none/],
  ])('throws CapturedBatchesError naming the line for %s', (_case, text, line, message) => {
    // Act
    const error = (() => {
      try {
        parseCapturedBatches(text);
      } catch (e) {
        return e;
      }
      return undefined;
    })();

    // Assess
    expect(error).toBeInstanceOf(CapturedBatchesError);
    expect((error as CapturedBatchesError).line).toBe(line);
    expect((error as CapturedBatchesError).message).toMatch(message);
    expect((error as CapturedBatchesError).message).toContain(`line ${line}:`);
  });
});
