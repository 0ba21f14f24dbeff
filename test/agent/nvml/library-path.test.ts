import { describe, expect, it } from 'vitest';
import { resolveNvmlLibraryPath } from '../../../agent/sources/nvml';

describe('resolveNvmlLibraryPath', () => {
  it.each([
    {
      case: 'the flag over the env',
      flag: '/flag/lib.so',
      env: { GPU_SENTINEL_NVML_LIB: '/env/lib.so' },
      want: '/flag/lib.so',
    },
    {
      case: 'the env without a flag',
      flag: undefined,
      env: { GPU_SENTINEL_NVML_LIB: '/env/lib.so' },
      want: '/env/lib.so',
    },
    {
      case: 'the env when the flag is empty',
      flag: '',
      env: { GPU_SENTINEL_NVML_LIB: '/env/lib.so' },
      want: '/env/lib.so',
    },
    { case: 'the soname with neither', flag: undefined, env: {}, want: 'libnvidia-ml.so.1' },
    {
      case: 'the soname when the env is empty',
      flag: undefined,
      env: { GPU_SENTINEL_NVML_LIB: '' },
      want: 'libnvidia-ml.so.1',
    },
  ])('chooses $case', ({ flag, env, want }) => {
    // Prepare / Act
    const path = resolveNvmlLibraryPath(flag, env);
    // Assess
    expect(path).toBe(want);
  });
});
