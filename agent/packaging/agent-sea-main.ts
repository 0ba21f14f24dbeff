import { runAgentProgram } from './agent-program';

/**
 * Entry of the single executable agent (`gpu-sentinel-agent`, Node.js with this bundle injected:
 * `build-agent-sea.ts`): the command line of {@link runAgentProgram}. A CommonJS bundle (a single
 * executable's main script is CommonJS, hence no top-level `await`); `process.argv` is
 * `[executable, executable, ...args]` there, as for a script.
 */
void runAgentProgram(process.argv);
