/**
 * The agent's version, reported in every batch as `agent.version` and by `gpu-sentinel-agent --version`.
 * Kept equal to `version` in package.json (a test checks it).
 */
export const AGENT_VERSION = '0.1.0';
