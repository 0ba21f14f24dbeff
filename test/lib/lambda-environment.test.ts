import type { CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import type * as lambda from 'aws-cdk-lib/aws-lambda';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  COMMON_VARIABLES,
  LAMBDA_VARIABLES,
  type LambdaName,
  STORE_KINDS,
  STORE_VARIABLE,
  STORE_VARIABLES,
  type VariableUse,
} from '../../lambdas/domain/lambda-environment';
import { fleetEvaluatorFromEnvironment } from '../../lambdas/handlers/fleet-evaluator';
import { handlerFromEnvironment } from '../../lambdas/handlers/ingest';
import { reportHandlerFromEnvironment } from '../../lambdas/handlers/report';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { buildStack } from './build-stack';

/** Each pipeline function: its construct's function in the stack, and how its handler starts from an environment. */
const FUNCTIONS: Record<
  LambdaName,
  { of: (s: GpuSentinelStack) => lambda.IFunction; start: (env: NodeJS.ProcessEnv) => unknown }
> = {
  ingest: { of: (s) => s.ingest.function, start: (env) => handlerFromEnvironment(env) },
  fleetEvaluator: { of: (s) => s.fleet.function, start: (env) => fleetEvaluatorFromEnvironment(env) },
  report: { of: (s) => s.reports.function, start: (env) => reportHandlerFromEnvironment(env) },
};

/** What the Lambda service itself sets in every function's environment (the stack cannot). */
const LAMBDA_SERVICE_ENV = { AWS_REGION: 'us-east-1' };

/**
 * Starts a handler from `variables` as the function would get them (CloudFormation references
 * replaced by placeholder strings) and returns the names it read.
 */
function namesRead(
  start: (env: NodeJS.ProcessEnv) => unknown,
  variables: Record<string, unknown>,
): Set<string> {
  const env: NodeJS.ProcessEnv = { ...LAMBDA_SERVICE_ENV };
  for (const [name, value] of Object.entries(variables)) {
    env[name] = typeof value === 'string' ? value : `resolved-at-deploy-${name.toLowerCase()}`;
  }
  const read = new Set<string>();
  const recording = new Proxy(env, {
    get(target, name, receiver) {
      if (typeof name === 'string') read.add(name);
      return Reflect.get(target, name, receiver);
    },
  });
  start(recording);
  return read;
}

/** The use of `name` for function `fn` in lambdas/domain/lambda-environment.ts, undefined when it is not listed. */
function declaredUse(fn: LambdaName, name: string): VariableUse | undefined {
  if (name === STORE_VARIABLE) return 'required';
  const tables: Readonly<Record<string, VariableUse>>[] = [
    COMMON_VARIABLES,
    LAMBDA_VARIABLES[fn],
    ...STORE_KINDS.map((k) => STORE_VARIABLES[k]),
  ];
  return tables.find((t) => name in t)?.[name];
}

describe.each(STORE_KINDS)('the Lambdas’ environment, store %s', (store) => {
  let stack: GpuSentinelStack;
  let template: Template;

  // One of the two stacks sets the grace period, so its variable is checked against the handler too.
  const remediationDelayS = store === 'timestream' ? 900 : undefined;

  beforeAll(() => {
    stack = buildStack({ store, remediationDelayS });
    template = Template.fromStack(stack);
  });

  /** The variables the template gives function `fn`. */
  function templateVariables(fn: LambdaName): Record<string, unknown> {
    const id = stack.getLogicalId(FUNCTIONS[fn].of(stack).node.defaultChild as CfnResource);
    const resource = template.findResources('AWS::Lambda::Function')[id];
    return (resource?.Properties.Environment?.Variables ?? {}) as Record<string, unknown>;
  }

  it.each(Object.keys(FUNCTIONS) as LambdaName[])(
    'gives %s exactly what its handler reads, and the handler starts from it',
    (fn) => {
      // Prepare
      const variables = templateVariables(fn);

      // Act
      const read = namesRead(FUNCTIONS[fn].start, variables);

      // Assess: every variable set is read (but the runtime's own), nothing set is unknown to the table
      expect(Object.keys(variables).filter((name) => !read.has(name))).toEqual(['NODE_OPTIONS']);
      expect(Object.keys(variables).filter((name) => declaredUse(fn, name) === undefined)).toEqual([]);
      // Assess: what the handler reads and the stack does not set has a default there
      const unset = [...read].filter((name) => !(name in variables));
      expect(unset.filter((name) => !['optional', 'reserved'].includes(declaredUse(fn, name) ?? ''))).toEqual(
        [],
      );
    },
  );

  it.each(Object.keys(FUNCTIONS) as LambdaName[])(
    'sets every required variable of %s and its store, and none the Lambda service reserves',
    (fn) => {
      // Prepare
      const variables = templateVariables(fn);
      const table = { ...COMMON_VARIABLES, ...LAMBDA_VARIABLES[fn], ...STORE_VARIABLES[store] };

      // Act
      const uses = Object.entries(table) as [string, VariableUse][];

      // Assess
      expect(variables[STORE_VARIABLE]).toBe(store);
      expect(uses.filter(([name, use]) => use === 'required' && !(name in variables))).toEqual([]);
      expect(uses.filter(([name, use]) => use === 'reserved' && name in variables)).toEqual([]);
    },
  );

  it('gives ingest REMEDIATION_DELAY_S only when remediationDelayS is set', () => {
    // Act
    const variables = templateVariables('ingest');

    // Assess
    expect(variables.REMEDIATION_DELAY_S).toBe(remediationDelayS === undefined ? undefined : '900');
  });

  it('gives no function the other store’s variables', () => {
    // Prepare
    const other = STORE_KINDS.find((k) => k !== store) as (typeof STORE_KINDS)[number];

    // Act
    const leaked = (Object.keys(FUNCTIONS) as LambdaName[]).flatMap((fn) =>
      Object.keys(templateVariables(fn)).filter((name) => name in STORE_VARIABLES[other]),
    );

    // Assess
    expect(leaked).toEqual([]);
  });
});

describe('remediationDelayS', () => {
  it('fails synth naming the prop when it is not whole seconds in 0..86400', () => {
    // Act
    const build = () => buildStack({ remediationDelayS: 90.5 });

    // Assess
    expect(build).toThrow(/remediationDelayS/);
  });
});
