import { AgentError } from '../errors';
import type { AgentConfigSource } from './agent-config-source';

/**
 * An agent option is invalid, a config file is missing, unreadable, not JSON or has an unknown
 * key. The message names where the value came from (`file /etc/gpu-sentinel/agent.json`,
 * `env GPU_SENTINEL_FLUSH_INTERVAL_S`, `flag --flush-interval-s`) and the option, in the form
 * ``Expected `flushIntervalS` to be an integer in 1..3600, got `-5` (number)``.
 */
export class AgentConfigError extends AgentError {
  override readonly name = 'AgentConfigError';
  /** Where the bad value came from. */
  readonly source: AgentConfigSource;
  /** The option (config key) at fault, e.g. `flushIntervalS`; `(file)` for file-level errors. */
  readonly option: string;
  /** The value refused, as read (after string-to-number/switch parsing for env and flags). */
  readonly value: unknown;

  /**
   * @param source - where the value came from
   * @param option - the config key at fault, or `(file)`
   * @param value - the refused value
   * @param message - what was expected and what came (the source is prefixed)
   * @param options - `cause`
   */
  constructor(
    source: AgentConfigSource,
    option: string,
    value: unknown,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${describeSource(source)}: ${message}`, options);
    this.source = source;
    this.option = option;
    this.value = value;
  }
}

/**
 * Renders a source for a message: `file <path>`, `env <NAME>`, `flag --<name>`, `default`.
 *
 * @param source - the source
 * @returns one short phrase
 */
export function describeSource(source: AgentConfigSource): string {
  switch (source.kind) {
    case 'file':
      return `file ${source.path}`;
    case 'env':
      return `env ${source.variable}`;
    case 'flag':
      return `flag ${source.flag}`;
    case 'default':
      return 'default';
  }
}
