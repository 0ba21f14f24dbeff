/**
 * Synthesizes the gpu-sentinel stack and writes its CloudFormation template as JSON to stdout:
 * what `gpu-sentinel cost-model` prices. Run in a child process (`synthesizeStackTemplate`) so the
 * CLI never loads aws-cdk-lib itself. Argument: the stack props as JSON (`{"store":"timestream"}`).
 * Uses `cdk.json`'s feature flags, skips esbuild bundling (the template is the same), and removes
 * its synth folder.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { App } from 'aws-cdk-lib';
import { GpuSentinelStack, type GpuSentinelStackProps } from '../../lib/gpu-sentinel-stack';

const STACK_NAME = 'GpuSentinel';
const props = JSON.parse(process.argv[2] ?? '{}') as GpuSentinelStackProps;
const { context } = JSON.parse(readFileSync(new URL('../../cdk.json', import.meta.url), 'utf8')) as {
  context: Record<string, unknown>;
};
const outdir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-cost-'));
try {
  const app = new App({ outdir, context: { ...context, 'aws:cdk:bundling-stacks': [] } });
  new GpuSentinelStack(app, STACK_NAME, props);
  process.stdout.write(JSON.stringify(app.synth().getStackByName(STACK_NAME).template));
} finally {
  rmSync(outdir, { recursive: true, force: true });
}
