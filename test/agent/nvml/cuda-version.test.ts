import { describe, expect, it } from 'vitest';
import { formatCudaVersion } from '../../../agent/sources/nvml';

describe('formatCudaVersion', () => {
  it.each([
    { input: 12040, want: '12.4' },
    { input: 12020, want: '12.2' },
    { input: 11080, want: '11.8' },
    { input: 13000, want: '13.0' },
    { input: 0, want: undefined },
    { input: -1, want: undefined },
    { input: 12.5, want: undefined },
  ])('formats $input as $want', ({ input, want }) => {
    // Prepare / Act
    const version = formatCudaVersion(input);
    // Assess
    expect(version).toBe(want);
  });
});
