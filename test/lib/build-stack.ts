import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll } from 'vitest';
import { GpuSentinelStack, type GpuSentinelStackProps } from '../../lib/gpu-sentinel-stack';

/** Entry file used by the template tests instead of the real handler. */
export const STUB_INGEST_ENTRY = fileURLToPath(new URL('./fixtures/ingest-stub.ts', import.meta.url));

/**
 * The context of the repository's `cdk.json` (the CDK's recommended feature flags), so the template
 * tests synthesize what `cdk synth` / `cdk deploy` would.
 */
export const CDK_JSON_CONTEXT: Readonly<Record<string, unknown>> = (
  JSON.parse(readFileSync(fileURLToPath(new URL('../../cdk.json', import.meta.url)), 'utf8')) as {
    context: Record<string, unknown>;
  }
).context;

/**
 * Where this test file's apps synthesize: one temp folder per test file, removed when its tests
 * end. Without an `outdir` the CDK makes a `cdk.out*` folder in the system temp dir for every app
 * and never removes it (hundreds per test run).
 */
const OUTDIR_ROOT = mkdtempSync(join(tmpdir(), 'gpu-sentinel-synth-'));
afterAll(() => rmSync(OUTDIR_ROOT, { recursive: true, force: true }));

/**
 * A fresh synth folder for one app, under this test file's temp folder (removed after its tests).
 *
 * @returns an absolute path to a new, empty folder
 */
export function testOutdir(): string {
  return mkdtempSync(join(OUTDIR_ROOT, 'cdk.out-'));
}

/** How {@link buildStack} synthesizes. */
export interface BuildStackOptions {
  /**
   * Run the CDK's built-in CloudFormation validation (the resource schemas, as `cdk synth` does) at
   * synth. It changes nothing in the template and costs seconds per app, so only
   * `cloudformation-validate.test.ts` turns it on.
   * @default false
   */
  readonly cloudFormationValidation?: boolean;
}

/**
 * Builds a {@link GpuSentinelStack} in a fresh app with `cdk.json`'s feature flags that skips
 * esbuild bundling (fast, and independent of the handler being written elsewhere) and, unless
 * asked, the built-in CloudFormation validation.
 *
 * @param props - stack props; `ingestEntry` defaults to the stub
 * @param options - what synth runs besides the template
 * @returns the stack
 */
export function buildStack(
  props: GpuSentinelStackProps = {},
  options: BuildStackOptions = {},
): GpuSentinelStack {
  return new GpuSentinelStack(testApp(options), 'TestStack', { ingestEntry: STUB_INGEST_ENTRY, ...props });
}

/** This test file's stacks that tests only read, by their props. */
const SHARED = new Map<string, { readonly stack: GpuSentinelStack; readonly template: Template }>();

/**
 * The stack for `props` and its template, synthesized once per test file and shared by every test
 * that asks for the same props. Only for tests that read: a test that adds to a stack (a grant, an
 * alarm) builds its own with {@link buildStack}.
 *
 * @param props - stack props, as for {@link buildStack}
 * @returns the stack and its template
 */
export function sharedStack(props: GpuSentinelStackProps = {}): {
  readonly stack: GpuSentinelStack;
  readonly template: Template;
} {
  const key = JSON.stringify(props);
  let shared = SHARED.get(key);
  if (shared === undefined) {
    const stack = buildStack(props);
    shared = { stack, template: Template.fromStack(stack) };
    SHARED.set(key, shared);
  }
  return shared;
}

/**
 * An app for template tests: `cdk.json`'s feature flags, a synth folder of its own under this test
 * file's temp folder, no esbuild bundling and, unless asked, no built-in CloudFormation validation.
 *
 * @param options - what synth runs besides the template
 * @returns the app
 */
export function testApp(options: BuildStackOptions = {}): App {
  return new App({
    outdir: testOutdir(),
    builtinCloudFormationValidation: options.cloudFormationValidation ?? false,
    context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] },
  });
}

/**
 * The CloudFormation value of the ARN that lets a caller POST batches to the stage:
 * `arn:<partition>:execute-api:<region>:<account>:<api id>/prod/POST/v1/batches`.
 */
export function batchesInvokeArn(apiLogicalId: string): unknown {
  return {
    'Fn::Join': [
      '',
      [
        'arn:',
        { Ref: 'AWS::Partition' },
        ':execute-api:',
        { Ref: 'AWS::Region' },
        ':',
        { Ref: 'AWS::AccountId' },
        ':',
        { Ref: apiLogicalId },
        '/prod/POST/v1/batches',
      ],
    ],
  };
}
