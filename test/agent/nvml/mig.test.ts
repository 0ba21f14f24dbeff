import { afterEach, describe, expect, it } from 'vitest';
import { type NvmlLogger, NvmlSource } from '../../../agent/sources/nvml';
import { fakeNvmlPath, setFakeNvmlEnv } from '../../setup/fake-nvml';

function recordingLogger() {
  const lines: { level: 'info' | 'warn'; data: Record<string, unknown>; message: string }[] = [];
  const logger: NvmlLogger = {
    info: (data, message) => lines.push({ level: 'info', data, message }),
    warn: (data, message) => lines.push({ level: 'warn', data, message }),
  };
  return { logger, lines };
}

let source: NvmlSource | undefined;
afterEach(() => {
  source?.close();
  source = undefined;
  setFakeNvmlEnv({});
});

describe('NvmlSource and MIG mode', () => {
  it('detects a GPU in MIG mode and says plainly that its per-instance activity is not read', () => {
    // Prepare
    setFakeNvmlEnv({ MIG_GPU: 3 });
    const { logger, lines } = recordingLogger();

    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });

    // Assess
    const mig = lines.filter((l) => l.data.mig === true);
    expect(mig).toHaveLength(1);
    expect(mig[0]).toMatchObject({ level: 'warn', data: { gpu_index: 3 } });
    expect(mig[0]?.message).toMatch(/GPU 3 is in MIG mode: .*not read them per instance.*dcgm-exporter/);
  });

  it('says nothing of MIG where no GPU is in MIG mode', () => {
    // Prepare
    const { logger, lines } = recordingLogger();

    // Act
    source = NvmlSource.open({ libraryPath: fakeNvmlPath(), logger });

    // Assess
    expect(lines.filter((l) => l.data.mig === true)).toEqual([]);
  });
});
