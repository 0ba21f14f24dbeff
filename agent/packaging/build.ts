import { parseArgs } from 'node:util';
import { AGENT_BUNDLE_ARCHES, type AgentBundleArch, buildAgentBundle } from './build-agent-bundle';
import { buildAgentSea } from './build-agent-sea';

/**
 * Builds the agent: `npx tsx agent/packaging/build.ts [--sea] [--out DIR] [--arch x64|arm64]
 * [--tarball] [--no-minify]`. Without `--sea`: the ESM bundle a host's Node.js runs (dist/agent);
 * with `--sea`: the single executable, no Node.js needed on the host (dist/agent-<arch>; fetches
 * the Node.js binary and postject from the npm registry once). Prints the folder, sizes, tarball.
 */
const { values } = parseArgs({
  options: {
    out: { type: 'string' },
    arch: { type: 'string' },
    tarball: { type: 'boolean', default: false },
    /** Readable output without source maps (minified with `.map` files by default). */
    'no-minify': { type: 'boolean', default: false },
    /** The single executable (Node.js 24 with the bundle injected) instead of the ESM bundle. */
    sea: { type: 'boolean', default: false },
    /** With --sea: the Node.js release inside (default SEA_NODE_VERSION, 24). */
    'node-version': { type: 'string' },
  },
});
if (values.arch !== undefined && !(AGENT_BUNDLE_ARCHES as readonly string[]).includes(values.arch)) {
  process.stderr.write(`Expected \`--arch\` to be one of x64, arm64, got \`${values.arch}\` (string)\n`);
  process.exit(2);
}
if (values.sea) {
  const sea = await buildAgentSea({
    ...(values.out ? { outDir: values.out } : {}),
    ...(values.arch ? { arch: values.arch as AgentBundleArch } : {}),
    tarball: values.tarball,
    ...(values['node-version'] ? { nodeVersion: values['node-version'] } : {}),
  });
  process.stdout.write(
    `agent executable: ${sea.executable} (${(sea.executableBytes / 1024 / 1024).toFixed(1)} MiB, bundle ${(sea.bundleBytes / 1024 / 1024).toFixed(2)} MiB)${sea.tarball ? `\ntarball: ${sea.tarball}` : ''}\n`,
  );
  process.exit(0);
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
