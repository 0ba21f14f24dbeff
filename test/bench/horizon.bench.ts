import { bench, describe } from 'vitest';
import type { GpuSample } from '../../agent/window/gpu-sample';
import { HorizonTracker } from '../../agent/window/horizon';
import { busySample } from '../agent/window/samples';

/**
 * The horizon's cost on an 8-GPU host at 1 Hz: one `add` per GPU per second (steady state, the
 * ring full and evicting), and one `window()` per GPU per flush over the 900 samples of a full
 * 15-minute horizon. Setup is at the top level: vitest bench does not run beforeAll hooks.
 */
type MutableSample = { -readonly [K in keyof GpuSample]: GpuSample[K] };

const GPUS = [0, 1, 2, 3, 4, 5, 6, 7];

const windowTracker = new HorizonTracker();
for (let second = 1; second <= 900; second++)
  for (const gpu of GPUS) windowTracker.add(busySample(second, gpu));
const end = new Date(busySample(900).at_ms + 500);

const addTracker = new HorizonTracker();
for (let second = 0; second < 900; second++) for (const gpu of GPUS) addTracker.add(busySample(second, gpu));
/** 600 seconds of varied samples, reused with a fresh time each call so time only moves forward. */
const feed: MutableSample[][] = Array.from({ length: 600 }, (_, s) => GPUS.map((gpu) => busySample(s, gpu)));
const firstMs = busySample(900).at_ms;
let second = 0;

describe('HorizonTracker, 8 GPUs, 900 one-second samples each', () => {
  bench('add() of one sample of each of 8 GPUs', () => {
    const samples = feed[second % feed.length]!;
    const atMs = firstMs + second++ * 1000;
    for (const sample of samples) {
      sample.at_ms = atMs;
      addTracker.add(sample);
    }
  });

  bench('window() of 8 GPUs over 900 samples', () => {
    for (const gpu of GPUS) {
      if (windowTracker.window({ index: gpu }, end) === undefined)
        throw new Error(`no window for GPU ${gpu}`);
    }
  });
});
