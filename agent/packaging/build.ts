import { parseArgs } from 'node:util';
import { AGENT_BUNDLE_ARCHES, type AgentBundleArch, buildAgentBundle } from './build-agent-bundle';

/**
 * Builds the agent bundle: `npx tsx agent/packaging/build.ts [--out dist/agent] [--arch x64|arm64]
 * [--tarball] [--no-minify]`. Prints the folder, the bundle size and the tarball.
 */
const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    arch: { type: 'string' },
    tarball: { type: 'boolean', default: false },
    /** Readable output without source maps (minified with `.map` files by default). */
    'no-minify': { type: 'boolean', default: false },
  },
});
if (values.arch !== undefined && !(AGENT_BUNDLE_ARCHES as readonly string[]).includes(values.arch)) {
  process.stderr.write(`Expected \`--arch\` to be one of x64, arm64, got \`${values.arch}\` (string)\n`);
  process.exit(2);
}
const bundle = await buildAgentBundle({
  ...(values.out ? { outDir: values.out } : {}),
  ...(values.arch ? { arch: values.arch as AgentBundleArch } : {}),
  tarball: values.tarball,
  minify: !values['no-minify'],
});
process.stdout.write(
  `agent bundle: ${bundle.outDir} (${(bundle.bundleBytes / 1024 / 1024).toFixed(2)} MiB .mjs, ${bundle.chunks.length} chunks)${bundle.tarball ? `\ntarball: ${bundle.tarball}` : ''}\n`,
);
