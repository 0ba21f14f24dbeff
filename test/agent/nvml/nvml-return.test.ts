import { describe, expect, it } from 'vitest';
import { nvmlOutcome } from '../../../agent/sources/nvml';

describe('nvmlOutcome', () => {
  it.each([
    { code: 0, name: 'SUCCESS', want: 'value' },
    { code: 3, name: 'NOT_SUPPORTED', want: 'absent' },
    { code: 15, name: 'GPU_IS_LOST', want: 'lost' },
    { code: 16, name: 'RESET_REQUIRED', want: 'lost' },
    { code: 1, name: 'UNINITIALIZED', want: 'error' },
    { code: 7, name: 'INSUFFICIENT_SIZE', want: 'error' },
    { code: 18, name: 'LIB_RM_VERSION_MISMATCH', want: 'error' },
    { code: 999, name: 'UNKNOWN', want: 'error' },
  ])('maps $code ($name) to $want', ({ code, want }) => {
    // Prepare / Act
    const outcome = nvmlOutcome(code);
    // Assess
    expect(outcome).toBe(want);
  });
});
