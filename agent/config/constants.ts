/** Config file read when none is named, JSON; its absence is fine (defaults, env and flags apply). */
export const DEFAULT_AGENT_CONFIG_FILE = '/etc/gpu-sentinel/agent.json';

/** Environment variable naming the config file; like `--config`, a file it names must exist. */
export const AGENT_CONFIG_FILE_ENV = 'GPU_SENTINEL_CONFIG';

/** Prefix of every agent environment variable, e.g. `GPU_SENTINEL_FLUSH_INTERVAL_S`. */
export const AGENT_ENV_PREFIX = 'GPU_SENTINEL_';

/** The value that turns a path or URL source off (`kmsgPath`, `efaRoot`, `dcgmExporterUrl`). */
export const OFF = 'off';

/** One mebibyte, bytes. */
export const MIB = 1024 * 1024;

/** One gibibyte, bytes. */
export const GIB = 1024 * MIB;
