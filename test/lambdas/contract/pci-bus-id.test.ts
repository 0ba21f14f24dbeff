import { describe, expect, it } from 'vitest';
import { normalizePciBusId } from '../../../lambdas/contract';

describe('normalizePciBusId', () => {
  it.each([
    { input: '00000000:19:00.0', want: '0000:19:00.0' },
    { input: '00000000:3B:00.0', want: '0000:3b:00.0' },
    { input: '0000:BB:00.0', want: '0000:bb:00.0' },
    { input: '00010000:10:1C.0', want: '10000:10:1c.0' },
    { input: '0:5:1.3', want: '0000:05:01.3' },
    { input: '0000:19:00', want: '0000:19:00.0' },
    { input: ' 0000:38:00 ', want: '0000:38:00.0' },
    { input: 'N/A', want: undefined },
    { input: '0000:19:00.9', want: undefined },
    { input: '', want: undefined },
  ])('normalises $input to $want', ({ input, want }) => {
    // Prepare / Act
    const id = normalizePciBusId(input);
    // Assess
    expect(id).toBe(want);
  });
});
