import koffi from 'koffi';
import type { NvmlStructLayout } from './structs';

/**
 * `nvmlDeviceAttributes_t` (40 B, align 8): what `nvmlDeviceGetAttributes_v2` says of a MIG device
 * (nvml.h API 13, `struct nvmlDeviceAttributes_st`): eight `unsigned int` then `memorySizeMB`
 * (`unsigned long long`, MiB) at offset 32. `gpuInstanceSliceCount` and `memorySizeMB` name the
 * GPU instance's profile (`<slices>g.<GB>gb`).
 */
export const nvmlDeviceAttributes = koffi.struct({
  multiprocessorCount: 'uint32',
  sharedCopyEngineCount: 'uint32',
  sharedDecoderCount: 'uint32',
  sharedEncoderCount: 'uint32',
  sharedJpegCount: 'uint32',
  sharedOfaCount: 'uint32',
  gpuInstanceSliceCount: 'uint32',
  computeInstanceSliceCount: 'uint32',
  memorySizeMB: 'uint64',
});

/** The x86-64 layouts of the MIG structs (docs/nvml.md §4), checked with the others at open. */
export const NVML_MIG_STRUCT_LAYOUTS: readonly NvmlStructLayout[] = [
  {
    struct: 'nvmlDeviceAttributes_t',
    type: nvmlDeviceAttributes,
    sizeBytes: 40,
    offsetsBytes: {
      multiprocessorCount: 0,
      sharedCopyEngineCount: 4,
      sharedDecoderCount: 8,
      sharedEncoderCount: 12,
      sharedJpegCount: 16,
      sharedOfaCount: 20,
      gpuInstanceSliceCount: 24,
      computeInstanceSliceCount: 28,
      memorySizeMB: 32,
    },
  },
];
