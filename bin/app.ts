/**
 * The gpu-sentinel CDK app (`cdk.json`: `npx tsx bin/app.ts`). Synthesizes without AWS
 * credentials. Stack props come from context, each key named as its prop
 * (`npx cdk synth -c remediationMode=notify -c organizationId=o-a1b2c3d4e5`; the list is in
 * `stackPropsFromContext`, bin/cdk-app-context.ts), the stack name from `stackName`.
 *
 * cdk-nag 3 runs as a CDK policy-validation plugin (`Validations.of(app).addPlugins`), not as an
 * Aspect: a finding that is not acknowledged in `lib/` fails the synth.
 */
import { App, Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { GpuSentinelStack } from '../lib/gpu-sentinel-stack';
import { stackNameFromContext, stackPropsFromContext } from './cdk-app-context';

const app = new App();
new GpuSentinelStack(app, stackNameFromContext(app.node), stackPropsFromContext(app.node, process.env));
Validations.of(app).addPlugins(new AwsSolutionsChecks(app, { verbose: true }));
app.synth();
