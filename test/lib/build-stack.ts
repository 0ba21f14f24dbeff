import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { App } from 'aws-cdk-lib';
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
 * Builds a {@link GpuSentinelStack} in a fresh app with `cdk.json`'s feature flags that skips
 * esbuild bundling (fast, and independent of the handler being written elsewhere).
 *
 * @param props - stack props; `ingestEntry` defaults to the stub
 * @returns the stack
 */
export function buildStack(props: GpuSentinelStackProps = {}): GpuSentinelStack {
  const app = new App({ context: { ...CDK_JSON_CONTEXT, 'aws:cdk:bundling-stacks': [] } });
  return new GpuSentinelStack(app, 'TestStack', { ingestEntry: STUB_INGEST_ENTRY, ...props });
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
