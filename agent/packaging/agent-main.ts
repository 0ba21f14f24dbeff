import { runAgentProgram } from './agent-program';

/**
 * Entry of the bundled host agent (`gpu-sentinel-agent.mjs`, run by a host's Node.js): the
 * command line of {@link runAgentProgram}.
 */
await runAgentProgram(process.argv);
