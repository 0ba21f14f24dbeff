/** The NVML library soname, found by the dynamic loader on every host with the NVIDIA driver. */
export const DEFAULT_NVML_LIBRARY = 'libnvidia-ml.so.1';

/** Environment variable that overrides the NVML library path (tests, unusual driver installs). */
export const NVML_LIBRARY_ENV = 'GPU_SENTINEL_NVML_LIB';

/**
 * Chooses the NVML shared library to load: the `--nvml-lib` flag value, else the
 * `GPU_SENTINEL_NVML_LIB` environment variable, else the soname `libnvidia-ml.so.1`.
 * Empty strings count as not given.
 *
 * @param flag - the `--nvml-lib` command-line value, if any
 * @param env - the environment to read @default process.env
 * @returns a path or soname for `koffi.load`
 * @default 'libnvidia-ml.so.1'
 * @example
 * resolveNvmlLibraryPath(undefined, { GPU_SENTINEL_NVML_LIB: '/opt/nvidia/libnvidia-ml.so.1' });
 */
export function resolveNvmlLibraryPath(flag?: string, env: NodeJS.ProcessEnv = process.env): string {
  if (flag !== undefined && flag !== '') return flag;
  const fromEnv = env[NVML_LIBRARY_ENV];
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv;
  return DEFAULT_NVML_LIBRARY;
}
