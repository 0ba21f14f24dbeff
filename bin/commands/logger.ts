import { pino } from 'pino';
import type { Log } from '../../lambdas/handlers/log';

/**
 * The CLI's structured logger: JSON lines on stderr (stdout stays for results).
 *
 * @param level - `debug|info|warn|error` (the CLI passes `GPU_SENTINEL_LOG_LEVEL`) @default 'warn', so a
 *   demo's output stays readable
 * @param writeLine - where the JSON lines go @default the process's stderr (fd 2)
 */
export function cliLogger(level = 'warn', writeLine?: (line: string) => void): Log {
  const destination = writeLine === undefined ? pino.destination(2) : { write: writeLine };
  const logger = pino({ level, base: { service: 'gpu-sentinel' } }, destination);
  return {
    info: (message, data) => logger.info(data ?? {}, message),
    warn: (message, data) => logger.warn(data ?? {}, message),
    error: (message, data) => logger.error(data ?? {}, message),
  };
}
