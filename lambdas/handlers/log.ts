import type { Logger } from '@aws-lambda-powertools/logger';
import type { Log } from '../domain/ports';

/** The log port (declared in `domain/ports.ts`), re-exported for the entries and the CLI that log. */
export type { Log };

/** A logger that drops everything. */
export const SILENT_LOG: Log = { info() {}, warn() {}, error() {} };

/**
 * The {@link Log} of a Lambda entry: each call goes to Powertools Logger (one JSON line, with the
 * Lambda context Powertools adds), `data` as its extra keys.
 *
 * @param logger - the entry's Powertools Logger
 * @returns the adapter
 */
export function powertoolsLog(logger: Logger): Log {
  return {
    info: (message, data) => logger.info(message, data ?? {}),
    warn: (message, data) => logger.warn(message, data ?? {}),
    error: (message, data) => logger.error(message, data ?? {}),
  };
}
