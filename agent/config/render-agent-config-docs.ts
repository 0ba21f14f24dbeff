import { AGENT_CONFIG_OPTIONS } from './agent-config-options';
import type { AgentConfigInput, AgentConfigName } from './agent-config-schema';

/**
 * The options table as Markdown (name, env var, flag, unit, default, description), for the README
 * and the docs; generated from {@link AGENT_CONFIG_OPTIONS} so it cannot drift from the code.
 *
 * @returns a GitHub-flavoured Markdown table, one row per option, ending with a newline
 * @example
 * process.stdout.write(renderAgentConfigMarkdown());
 */
export function renderAgentConfigMarkdown(): string {
  const cell = (s: string): string => s.replace(/\|/g, '\\|');
  const lines = [
    '| option (file key) | env | flag | unit | default | description |',
    '|---|---|---|---|---|---|',
    ...AGENT_CONFIG_OPTIONS.map((o) => {
      const def = o.defaultNote ?? (o.default === undefined ? '—' : `\`${o.default}\``);
      return `| \`${o.name}\` | \`${o.env}\` | \`${o.flag}\` | ${o.unit || '—'} | ${cell(def)} | ${cell(o.description)} |`;
    }),
  ];
  return `${lines.join('\n')}\n`;
}

/**
 * The sample config file's content: every option at its default, `null` for the options without
 * one (a file's `null` means "not set here"). `agent/packaging/agent.sample.json` is this, as JSON
 * with two-space indentation and a final newline.
 *
 * @returns an object with every option name as a key, in table order
 */
export function agentConfigSample(): Record<AgentConfigName, AgentConfigInput[AgentConfigName] | null> {
  const out = {} as Record<AgentConfigName, AgentConfigInput[AgentConfigName] | null>;
  for (const o of AGENT_CONFIG_OPTIONS) out[o.name] = o.default ?? null;
  return out;
}
