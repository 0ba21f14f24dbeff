import { pino } from 'pino';
import type { Log } from '../../lambdas/handlers/log';

/**
 * The CLI's structured logger: JSON lines on stderr (stdout stays for results), level from
 * `GPU_SENTINEL_LOG_LEVEL` (`debug|info|warn|error`, default `warn` so a demo's output stays readable).
 */
export function cliLogger(level = process.env.GPU_SENTINEL_LOG_LEVEL ?? 'warn'): Log {
  const logger = pino({ level, base: { service: 'gpu-sentinel' } }, pino.destination(2));
  return {
    info: (message, data) => logger.info(data ?? {}, message),
    warn: (message, data) => logger.warn(data ?? {}, message),
    error: (message, data) => logger.error(data ?? {}, message),
  };
}
