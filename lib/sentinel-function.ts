import { Duration, RemovalPolicy, Token } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import type { COMMON_VARIABLES, StackVariables } from '../lambdas/domain/lambda-environment';
import {
  LAMBDA_MEMORY_MIB_MAX,
  LAMBDA_MEMORY_MIB_MIN,
  LAMBDA_TIMEOUT_S_MAX,
  LAMBDA_UNRESERVED_CONCURRENCY_MIN,
} from './constants';
import { encryptedLogGroup } from './encrypted-log-group';
import { LAMBDA_BUNDLING, LAMBDA_RUNTIME } from './lambda-bundling';
import { PropsValidationError } from './props-validation-error';
import { validateIntegerInRange, validatePattern } from './validate-props';

/**
 * How a {@link SentinelFunction} is bundled: `NodejsFunction`'s bundling options, with lists that
 * may be `readonly` (the `as const` settings of lambda-bundling.ts).
 */
export type SentinelBundling = Omit<nodejs.BundlingOptions, 'mainFields' | 'externalModules'> & {
  /** Package.json fields esbuild resolves packages by, in order. @default - esbuild's */
  readonly mainFields?: readonly string[];
  /** Modules left out of the bundle. @default - none */
  readonly externalModules?: readonly string[];
};

/** Props of {@link SentinelFunction}. */
export interface SentinelFunctionProps {
  /** Absolute path of the handler's entry file (TypeScript), bundled by esbuild; it exports `handler`. */
  readonly entry: string;
  /** Absolute path of the lock file next to the project's package.json (the bundling root). */
  readonly depsLockFilePath: string;
  /**
   * What the function is, as the descriptions of its role and log key say it, e.g. `ingest Lambda`
   * (`gpu-sentinel ingest Lambda: least privilege, written by hand`).
   */
  readonly label: string;
  /** The function's description in the Lambda console. */
  readonly description: string;
  /** Powertools service name on every log line (`POWERTOOLS_SERVICE_NAME`), e.g. `gpu-sentinel-ingest`. */
  readonly serviceName: string;
  /** Memory, MiB, integer in 128..10240 (Lambda quotas); CPU is allotted in proportion. */
  readonly memoryMiB: number;
  /** Timeout, s, integer in 1..900 (Lambda quotas). */
  readonly timeoutSeconds: number;
  /**
   * Reserved concurrency, executions, integer ≥ 1: a cap on concurrent runs and a share of the
   * account's concurrency no other function can take. The account's Lambda concurrency quota must
   * be at least this plus the 100 Lambda keeps unreserved (`LAMBDA_UNRESERVED_CONCURRENCY_MIN`),
   * or the deploy fails.
   * @default - none (the account's unreserved pool)
   */
  readonly reservedConcurrentExecutions?: number;
  /**
   * X-Ray active tracing: a trace per invocation ($5 per million recorded, AWS X-Ray pricing page),
   * about $0.03 per GPU-month at one batch a minute for the ingest path; turn on to investigate.
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * How esbuild bundles the handler.
   * @default LAMBDA_BUNDLING (CommonJS, node24, minified, source maps without sources)
   */
  readonly bundling?: SentinelBundling;
  /**
   * The function's variables besides {@link COMMON_VARIABLES}, which the construct sets itself; give
   * them typed by `LambdaEnvironment<F>` of lambdas/domain/lambda-environment.ts. More can be added
   * with {@link SentinelFunction.addEnvironment}.
   * @default - none
   */
  readonly environment?: Readonly<Record<string, string>>;
  /**
   * Grants made to the function once its role exists and before the function is made, in this
   * order, e.g. `[(fn) => store.grantRead(fn), (fn) => topics.grantPublishAlerts(fn)]`: the role's
   * policy lists them before the X-Ray statement that active tracing adds, as `lambda.Function`
   * places its `initialPolicy`. Grants made after construction (`store.grantWrite(fn)`) follow it.
   * @default - none
   */
  readonly initialGrants?: ReadonlyArray<(grantee: iam.IGrantable) => unknown>;
  /**
   * How long the function's logs are kept; one of `logs.RetentionDays`.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the log group when the stack is deleted (the stack's key is always retained).
   * @default RemovalPolicy.RETAIN
   */
  readonly logRemovalPolicy?: RemovalPolicy;
}

/**
 * A pipeline Lambda as the house builds every one (ingest, fleet evaluator, reports): Node.js 24 on
 * arm64, X-Ray active only when asked (`tracing`), bundled by esbuild with source maps on (`NODE_OPTIONS=--enable-source-maps`),
 * an explicit log group encrypted with the stack's customer-managed KMS key (`stackKey`, rotation on), and an
 * execution role written by hand: it trusts `lambda.amazonaws.com` and starts with
 * `logs:CreateLogStream`/`logs:PutLogEvents` on its own log group (X-Ray's
 * `xray:PutTraceSegments`/`xray:PutTelemetryRecords` on `*` come with `tracing`); no AWS
 * managed policy. Everything else is granted to it ({@link grantPrincipal}) by the resources it
 * uses: `store.grantRead(fn)`, `topics.grantPublishAlerts(fn)`.
 *
 * A construct that is a function extends this one (IngestFunction, FleetEvaluator); one that owns
 * a function among other resources makes one under the id `Default` (FinanceReports), which the
 * CDK leaves out of logical IDs: either way the function's resources keep the logical IDs they had
 * directly under their owner. Construct IDs are a contract: `LogGroup`, `ServiceRole`,
 * `Function`.
 *
 * @example
 * const fn = new SentinelFunction(this, 'Evaluator', {
 *   entry, depsLockFilePath, label: 'fleet evaluator', description: 'fleet rules every 5 minutes',
 *   serviceName: 'gpu-sentinel-fleet', memoryMiB: 512, timeoutSeconds: 240,
 * });
 * store.grantRead(fn);
 */
export class SentinelFunction extends Construct implements iam.IGrantable {
  /** The function. */
  readonly function: nodejs.NodejsFunction;
  /** Its execution role. */
  readonly role: iam.Role;
  /** Its log group, encrypted with {@link logKey}. */
  readonly logGroup: logs.LogGroup;
  /** The stack's customer-managed key (`stackKey`, rotated yearly) that encrypts its log group. */
  readonly logKey: kms.Key;

  /**
   * @throws {PropsValidationError} when `memoryMiB`, `timeoutSeconds` or
   *   `reservedConcurrentExecutions` is not an integer in its range, or `label` or `serviceName`
   *   is empty
   */
  constructor(scope: Construct, id: string, props: SentinelFunctionProps) {
    super(scope, id);
    const { memoryMiB, timeoutSeconds, reservedConcurrentExecutions } = validateFunctionProps(props);

    const { key, logGroup } = encryptedLogGroup(this, {
      groupId: 'LogGroup',
      retention: props.logRetention ?? logs.RetentionDays.ONE_MONTH,
      removalPolicy: props.logRemovalPolicy ?? RemovalPolicy.RETAIN,
    });
    this.logKey = key;
    this.logGroup = logGroup;
    this.role = this.createRole(props.label);
    for (const grant of props.initialGrants ?? []) grant(this);
    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry,
      depsLockFilePath: props.depsLockFilePath,
      handler: 'handler',
      runtime: LAMBDA_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: memoryMiB,
      timeout: Duration.seconds(timeoutSeconds),
      tracing: props.tracing === true ? lambda.Tracing.ACTIVE : lambda.Tracing.DISABLED,
      ...(reservedConcurrentExecutions === undefined ? {} : { reservedConcurrentExecutions }),
      role: this.role,
      logGroup: this.logGroup,
      description: props.description,
      bundling: bundlingOptions(props.bundling ?? LAMBDA_BUNDLING),
      environment: {
        ...props.environment,
        POWERTOOLS_SERVICE_NAME: props.serviceName,
        NODE_OPTIONS: '--enable-source-maps',
      } satisfies StackVariables<typeof COMMON_VARIABLES>,
    });
  }

  /** The function's execution role: what resources grant their permissions to. */
  get grantPrincipal(): iam.IPrincipal {
    return this.role;
  }

  /**
   * Adds variables to the function's environment (a later value for the same name wins).
   *
   * @param variables - name → value; type them with `LambdaEnvironment<F>` of lambdas/domain/lambda-environment.ts
   */
  addEnvironment(variables: Readonly<Record<string, string>>): void {
    for (const [name, value] of Object.entries(variables)) this.function.addEnvironment(name, value);
  }

  /**
   * Lets `grantee` run the function: `lambda:InvokeFunction` on the function and its versions and
   * aliases (`<arn>` and `<arn>:*`), as `lambda.Function.grantInvoke` grants it.
   *
   * @param grantee - the principal to grant to, e.g. an operator's role that runs a report now
   * @returns the grant
   */
  grantInvoke(grantee: iam.IGrantable): iam.Grant {
    return this.function.grantInvoke(grantee);
  }

  /** The execution role: trusts Lambda, may write its own log group; construct ID `ServiceRole`. */
  private createRole(label: string): iam.Role {
    const role = new iam.Role(this, 'ServiceRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: `gpu-sentinel ${label}: least privilege, written by hand`,
    });
    role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );
    return role;
  }
}

/**
 * @param props - the props to check
 * @returns the sizes, checked
 * @throws {PropsValidationError} naming the prop and the value that is out of range
 */
function validateFunctionProps(props: SentinelFunctionProps): {
  memoryMiB: number;
  timeoutSeconds: number;
  reservedConcurrentExecutions?: number;
} {
  validatePattern('label', props.label, /\S/, 'a few words saying what the function is');
  validatePattern('serviceName', props.serviceName, /^[\w.:/@+-]+$/, 'a Powertools service name');
  return {
    memoryMiB: validateIntegerInRange(
      'memoryMiB',
      props.memoryMiB,
      LAMBDA_MEMORY_MIB_MIN,
      LAMBDA_MEMORY_MIB_MAX,
    ),
    timeoutSeconds: validateIntegerInRange('timeoutSeconds', props.timeoutSeconds, 1, LAMBDA_TIMEOUT_S_MAX),
    ...(props.reservedConcurrentExecutions === undefined
      ? {}
      : {
          reservedConcurrentExecutions: validateReservedConcurrency(
            'reservedConcurrentExecutions',
            props.reservedConcurrentExecutions,
          ),
        }),
  };
}

/**
 * @param prop - prop name used in the message
 * @param value - reserved concurrency, executions
 * @returns `value`
 * @throws {PropsValidationError} when `value` is not an integer ≥ 1; the message says what the
 *   account's quota must be
 */
function validateReservedConcurrency(prop: string, value: number): number {
  if (Token.isUnresolved(value)) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1) {
    throw new PropsValidationError(
      prop,
      `an integer N >= 1, with the account's Lambda concurrency quota >= N + ${LAMBDA_UNRESERVED_CONCURRENCY_MIN} (Lambda keeps ${LAMBDA_UNRESERVED_CONCURRENCY_MIN} unreserved)`,
      value,
    );
  }
  return value;
}

/**
 * {@link SentinelBundling} as `NodejsFunction` takes it: lists copied, keys in their order (a
 * stack synthesized without bundling hashes the options as they are written).
 */
function bundlingOptions(bundling: SentinelBundling): nodejs.BundlingOptions {
  return Object.fromEntries(
    Object.entries(bundling).map(([key, value]) => [key, Array.isArray(value) ? [...value] : value]),
  ) as nodejs.BundlingOptions;
}
