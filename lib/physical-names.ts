import { Token } from 'aws-cdk-lib';
import { PropsValidationError } from './props-validation-error';

/**
 * Physical names derived from the stack's name, for the resources CloudFormation cannot name
 * itself (a Glue database must be named). Every other resource of the stack gets a generated name
 * or one that carries the stack name, so two stacks of one region (`-c stackName=…`) share none,
 * and a redeploy after `cdk destroy` meets none of the resources the first one retained.
 */

/**
 * The Glue database of a stack: its name in lower-case snake case, every other character `_`
 * (`GpuSentinel` → `gpu_sentinel`, `GpuSentinel-eu2` → `gpu_sentinel_eu2`). Glue stores database
 * names lower-cased and Athena accepts only `[a-z0-9_]` in them, 1–255 characters (Athena user
 * guide, "Name databases, tables, and columns"); a CloudFormation stack name is 1–128 of
 * `[A-Za-z0-9-]` starting with a letter, so every stack name gives a valid one.
 *
 * @param stackName - the stack's name, as CloudFormation knows it (not a token)
 * @returns the Glue database name, 1–255 of `[a-z0-9_]`
 * @throws {PropsValidationError} when `stackName` is a token or gives no letter or digit
 */
export function glueDatabaseNameFor(stackName: string): string {
  if (Token.isUnresolved(stackName)) {
    throw new PropsValidationError(
      'stackName',
      'a stack name known at synth, to name the Glue database',
      stackName,
    );
  }
  const name = stackName
    .replace(/([a-z0-9])([A-Z])/g, '$1_$2')
    .replace(/([A-Z]+)([A-Z][a-z])/g, '$1_$2')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 255);
  if (name === '') {
    throw new PropsValidationError('stackName', 'a stack name with a letter or digit', stackName);
  }
  return name;
}
