import type { NvmlLogger } from '../../../agent/sources/nvml';

/** One line an {@link NvmlLogger} was given: its level, structured data and message. */
export interface LoggedLine {
  readonly level: 'info' | 'warn';
  readonly data: Record<string, unknown>;
  readonly message: string;
}

/** An NVML source logger that keeps every line it is given, in order, for a test to read. */
export function recordingLogger(): { logger: NvmlLogger; lines: LoggedLine[] } {
  const lines: LoggedLine[] = [];
  const logger: NvmlLogger = {
    info: (data, message) => lines.push({ level: 'info', data, message }),
    warn: (data, message) => lines.push({ level: 'warn', data, message }),
  };
  return { logger, lines };
}
