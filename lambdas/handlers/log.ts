import type { Logger } from '@aws-lambda-powertools/logger';

/**
 * The structured logger the handlers write to: Powertools Logger in Lambda (it has this shape),
 * a pino adapter in local mode, a recording fake in tests. Log once per condition, never per sample.
 */
export interface Log {
  /** Normal operation worth a line (batch accepted, alert sent). */
  info(message: string, data?: Record<string, unknown>): void;
  /** Something an operator may act on (rejected records, remediation escalated). */
  warn(message: string, data?: Record<string, unknown>): void;
  /** A failure (store down, publish failed). */
  error(message: string, data?: Record<string, unknown>): void;
}

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
