import { describe, expect, it } from 'vitest';
import { NvmlClosedError, NvmlSource, NvmlUnavailableError } from '../../../agent/sources/nvml';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

function openError(libraryPath: string): unknown {
  try {
    NvmlSource.open({ libraryPath }).close();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe('NvmlSource.open failures', () => {
  it('throws NvmlUnavailableError with the loader error as cause when the library is missing', () => {
    // Prepare
    setFakeNvmlEnv({});
    // Act
    const error = openError('/nonexistent/libnvidia-ml.so.1');
    // Assess
    expect(error).toBeInstanceOf(NvmlUnavailableError);
    expect(error).toMatchObject({ step: 'load', libraryPath: '/nonexistent/libnvidia-ml.so.1' });
    expect((error as Error).cause).toBeInstanceOf(Error);
    expect((error as Error).message).toContain('--nvml-lib');
  });

  it('throws NvmlUnavailableError naming the symbol when the library is not NVML', () => {
    // Prepare
    setFakeNvmlEnv({});
    // Act
    const error = openError('libc.so.6');
    // Assess
    expect(error).toBeInstanceOf(NvmlUnavailableError);
    expect(error).toMatchObject({ step: 'symbol' });
    expect((error as Error).message).toContain('nvmlInit_v2');
  });

  it('throws NvmlUnavailableError with the NVML code when init fails', () => {
    // Prepare
    setFakeNvmlEnv({ INIT_FAIL: true });
    // Act
    const error = openError(fakeNvmlPath());
    // Assess
    expect(error).toBeInstanceOf(NvmlUnavailableError);
    expect(error).toMatchObject({ step: 'init', code: 9 });
    expect((error as Error).message).toContain('Driver Not Loaded');
  });

  it('opens again after a failed init once the driver is back', () => {
    // Prepare
    setFakeNvmlEnv({ INIT_FAIL: true });
    openError(fakeNvmlPath());
    setFakeNvmlEnv({});
    // Act
    const source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Assess
    expect(source.identity()).toHaveLength(8);
    source.close();
  });

  it('refuses to sample after close', () => {
    // Prepare
    setFakeNvmlEnv({});
    const source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    // Act
    source.close();
    source.close();
    // Assess
    expect(() => source.sample(new Date())).toThrow(NvmlClosedError);
  });
});
