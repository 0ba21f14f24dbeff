import { Aws, Duration, type RemovalPolicy, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as nodejs from 'aws-cdk-lib/aws-lambda-nodejs';
import type * as logs from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { parseMetricsTeams } from '../lambdas/domain/batch-metrics';
import { MAX_METRIC_TEAMS, METRICS_NAMESPACE } from '../lambdas/domain/cloudwatch-metrics';
import { QUARANTINE_TAG, REMEDIATION_OPT_OUT_TAG } from '../lambdas/domain/constants';
import { MetricsTeamsError, PriceOverridesError, RuleThresholdsError } from '../lambdas/domain/errors';
import type {
  COMMON_VARIABLES,
  LambdaEnvironment,
  StackVariables,
} from '../lambdas/domain/lambda-environment';
import { type PriceRates, parsePriceRates, RATE_TABLES } from '../lambdas/domain/pricing';
import {
  parseRuleThresholds,
  THRESHOLD_NAMES,
  THRESHOLD_TABLE,
  type ThresholdName,
} from '../lambdas/domain/rules';
import type { AlertTopics } from './alert-topics';
import {
  DEFAULT_INGEST_RESERVED_CONCURRENCY,
  INGEST_MEMORY_MIB,
  INGEST_SERVICE_NAME,
  INGEST_TIMEOUT_SECONDS,
  INSTANCE_TYPE_PATTERN,
  MAX_INGEST_RESERVED_CONCURRENCY,
  REMEDIATION_OPT_OUT_VALUE,
} from './constants';
import { encryptedLogGroup } from './encrypted-log-group';
import { PropsValidationError } from './props-validation-error';
import { DEFAULT_REMEDIATION_MODE, REMEDIATION_MODES, type RemediationMode } from './remediation-mode';
import type { RemediationState } from './remediation-state';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import { validateIntegerInRange, validateOneOf, validatePattern } from './validate-props';

/**
 * The Lambda runtime of the ingest function: the newest Node.js this aws-cdk-lib offers
 * (nodejs24.x, deprecation 2028-04-30; aws.md §3.2). cdk-nag AwsSolutions-L1 flags older ones.
 */
export const INGEST_RUNTIME = lambda.Runtime.NODEJS_24_X;
/** esbuild target matching {@link INGEST_RUNTIME}. */
export const INGEST_BUNDLING_TARGET = 'node24';
/**
 * Modules kept out of the bundle: native or local-mode-only packages the ingest handler never
 * loads (koffi is the agent's NVML binding; DuckDB is the embedded local store).
 */
export const INGEST_EXTERNAL_MODULES: readonly string[] = [
  'koffi',
  '@duckdb/node-api',
  '@duckdb/node-bindings',
];

/**
 * Handler modules the ingest bundle ships as files of their own, loaded with `import()` on first
 * use: what only some requests need and is too big to parse at every cold start. `specifier` is
 * the import path exactly as the handler writes it (kept out of the main bundle), `entry` the
 * module's source relative to the project root, `outfile` the file next to `index.js`.
 * `make-instance-apis` holds the EC2, Auto Scaling and IAM clients (EC2's alone is ≈ 0.9 MB
 * minified), needed for the first lookup of an instance and for remediation only.
 */
export const INGEST_SPLIT_MODULES: ReadonlyArray<{
  readonly specifier: string;
  readonly entry: string;
  readonly outfile: string;
}> = [
  {
    specifier: './make-instance-apis.js',
    entry: 'lambdas/handlers/make-instance-apis.ts',
    outfile: 'make-instance-apis.js',
  },
];

/**
 * How the pipeline's CommonJS Lambdas are bundled (esbuild through `NodejsFunction`): CommonJS for
 * `node24`, minified with a source map that maps to file and line without embedding the sources
 * (Node reads the map at load under `--enable-source-maps`: 1.6 MB instead of 4.2 MB parsed at
 * every cold start); packages' ES module builds first (`mainFields`), so esbuild keeps only the
 * SDK commands the code imports (the CommonJS builds cannot be tree-shaken); the
 * {@link INGEST_EXTERNAL_MODULES} left out. The fleet evaluator uses it as is; ingest adds its
 * split modules ({@link INGEST_BUNDLING}).
 */
export const LAMBDA_BUNDLING = {
  format: nodejs.OutputFormat.CJS,
  target: INGEST_BUNDLING_TARGET,
  mainFields: ['module', 'main'],
  minify: true,
  sourceMap: true,
  sourcesContent: false,
  externalModules: INGEST_EXTERNAL_MODULES,
} as const;

/**
 * How the ingest Lambda is bundled: {@link LAMBDA_BUNDLING}, with the {@link INGEST_SPLIT_MODULES}
 * also left out of `index.js` (built next to it by the `afterBundling` hook).
 */
export const INGEST_BUNDLING = {
  ...LAMBDA_BUNDLING,
  externalModules: [...INGEST_EXTERNAL_MODULES, ...INGEST_SPLIT_MODULES.map((m) => m.specifier)],
} as const;

/**
 * The esbuild command lines that build the {@link INGEST_SPLIT_MODULES} next to the bundle, with
 * the settings of {@link INGEST_BUNDLING} (run after bundling, in the bundling environment).
 *
 * @param inputDir - the project root as the bundling environment sees it
 * @param outputDir - the asset folder holding `index.js`
 * @returns one shell command per split module
 */
export function splitModuleCommands(inputDir: string, outputDir: string): string[] {
  return INGEST_SPLIT_MODULES.map((m) =>
    [
      'npx --no-install esbuild',
      `"${inputDir}/${m.entry}"`,
      '--bundle --platform=node',
      `--format=${INGEST_BUNDLING.format}`,
      `--target=${INGEST_BUNDLING.target}`,
      `--main-fields=${INGEST_BUNDLING.mainFields.join(',')}`,
      '--minify --sourcemap --sources-content=false',
      ...INGEST_EXTERNAL_MODULES.map((e) => `--external:${e}`),
      `--outfile="${outputDir}/${m.outfile}"`,
    ].join(' '),
  );
}

/** Props of {@link IngestFunction}. */
export interface IngestFunctionProps {
  /** Absolute path of the handler's entry file (TypeScript), bundled by esbuild. */
  readonly entry: string;
  /** Absolute path of the lock file next to the project's package.json (bundling root). */
  readonly depsLockFilePath: string;
  /** Where the batches are written: its environment is passed on, and only its write permission granted. */
  readonly store: TelemetryStoreResources;
  /** Where alerts go (`sns:Publish` on critical, warning, info). */
  readonly topics: AlertTopics;
  /** The state table (remediation records, rate limits, cooldowns). */
  readonly state: RemediationState;
  /**
   * What the function does about broken instances: `off`, `notify` or `replace` (docs/design.md §8).
   * Only `replace` grants `autoscaling:SetInstanceHealth` and `ec2:CreateTags`.
   * @default 'replace'
   */
  readonly remediationMode?: RemediationMode;
  /**
   * On-demand price overrides, USD per instance-hour, by EC2 instance type
   * (`{ "p5.48xlarge": 55.04 }`); finite numbers ≥ 0. Passed to the ledger as `PRICE_OVERRIDES`.
   * @default - none (the built-in price table)
   */
  readonly priceOverridesUsdPerHour?: Readonly<Record<string, number>>;
  /**
   * What the deployment really pays, USD per instance-hour, keyed `type` (every region) or
   * `type@region`: `capacity_blocks` and `savings_plans` effective rates, `spot` prices (e.g. the
   * mean of `DescribeSpotPriceHistory`), and `spot_discount` (0 ≤ d < 1 off on-demand for a spot host
   * with no `spot` rate; without either a spot host is unpriced, never billed at on-demand). Checked at
   * synth by the parser the Lambda runs at cold start; passed as `PRICE_RATES`.
   * @default - none (list prices; spot hosts unpriced)
   */
  readonly priceRates?: PriceRates;
  /**
   * Role names whose instance sessions the handler admits (`AGENT_ROLE_NAMES`); the API's resource
   * policy already restricts roles, this is the handler's own second check.
   * @default - no role check in the handler
   */
  readonly agentRoleNames?: readonly string[];
  /**
   * Rule-threshold overrides by name (`{ "fakeLoadGpuUtilAtLeast": 0.8 }`; names, units and ranges in
   * the thresholds table of `lambdas/domain/rules/thresholds.ts`). Passed as `RULE_THRESHOLDS`; a bad
   * name or value fails at synth, naming it (and the Lambda checks again at cold start).
   * @default - none (the table's defaults)
   */
  readonly ruleThresholds?: Readonly<Record<string, number>>;
  /**
   * Teams whose `team` tag becomes their own `Team` value on the CloudWatch metrics (`WastedUsd`,
   * `SmActive` by Team); every other team is counted as `other`, no tag as `untagged`, so the
   * number of custom metrics stays bounded whatever the agents send. At most 50 names of 1–64
   * `[A-Za-z0-9_.-:/@+]`, not `other` or `untagged`. Passed as `METRICS_TEAMS`.
   * @default - none (every tagged team is `other`)
   */
  readonly metricsTeams?: readonly string[];
  /**
   * How long the function's logs are kept.
   * @default logs.RetentionDays.ONE_MONTH
   */
  readonly logRetention?: logs.RetentionDays;
  /**
   * What happens to the log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * Reserved concurrency of the function, executions, 1..900: the most batches processed at once
   * (API Gateway answers 429 past it and the agents retry), and a share of the account's Lambda
   * concurrency no other function can take.
   * @default 100 ({@link DEFAULT_INGEST_RESERVED_CONCURRENCY})
   */
  readonly reservedConcurrentExecutions?: number;
}

/**
 * The ingest Lambda (docs/design.md §1): validates a batch, computes the waste ledger, writes the
 * telemetry store (Firehose by default, or Timestream), evaluates the per-instance rules, publishes
 * alerts and remediates. arm64, Node.js 24, 512 MiB, 25 s, reserved concurrency 100, X-Ray active,
 * bundled by esbuild (CJS, minified, source maps), with an explicit log group encrypted by its own
 * KMS key and a role written by hand (no AWS managed policy):
 * - `logs:CreateLogStream`, `logs:PutLogEvents` on its own log group;
 * - the store's write permission only: `firehose:PutRecordBatch` on the three delivery streams, or
 *   `timestream:WriteRecords` on the three tables and `timestream:DescribeEndpoints` on `*`;
 * - `sns:Publish` on critical/warning/info, `kms:GenerateDataKey`/`kms:Decrypt` on their key;
 * - `dynamodb:GetItem/PutItem/UpdateItem/DeleteItem/Query` on the state table (a transaction's
 *   items are authorized as these actions);
 * - `autoscaling:DescribeAutoScalingInstances`, `autoscaling:DescribeAutoScalingGroups` and
 *   `ec2:DescribeInstances` on `*` (server-side enrichment and the sender check; these actions
 *   support no resource-level permissions);
 * - `iam:GetInstanceProfile` on the account's instance profiles (the sender check compares the
 *   instance profile's role with the caller's);
 * - in `replace` mode: `autoscaling:SetInstanceHealth` on every Auto Scaling group of the account
 *   unless the group is tagged `gpu-sentinel:remediation=off` (condition
 *   `StringNotEquals aws:ResourceTag/gpu-sentinel:remediation = off`: groups need no tag to be
 *   managed, and the opt-out is enforced by IAM as well as by the domain policy), and
 *   `ec2:CreateTags` on the account's instances limited to the tag key `gpu-sentinel:quarantine`;
 * - `xray:PutTraceSegments`, `xray:PutTelemetryRecords` (added by active tracing, `*`).
 * ARNs use region `*`: agents in any region may report to this API.
 */
export class IngestFunction extends Construct {
  /** The function. */
  readonly function: nodejs.NodejsFunction;
  /** Its execution role. */
  readonly role: iam.Role;
  /** Its log group, encrypted with {@link logKey}. */
  readonly logGroup: logs.LogGroup;
  /** The customer managed key (rotated yearly) its log group is encrypted with; CloudWatch Logs of this account and region may use it for log groups only. */
  readonly logKey: kms.Key;
  /** The remediation mode in effect. */
  readonly remediationMode: RemediationMode;

  /**
   * @throws {PropsValidationError} when `remediationMode` is not `off|notify|replace`, a price
   *   override has a bad instance type or a price that is not a finite number ≥ 0, a price rate is
   *   malformed (see {@link validatePriceRates}),
   *   `reservedConcurrentExecutions` is not an integer in 1..900, or `metricsTeams` is too long or
   *   has a bad name
   */
  constructor(scope: Construct, id: string, props: IngestFunctionProps) {
    super(scope, id);
    this.remediationMode = validateOneOf(
      'remediationMode',
      props.remediationMode ?? DEFAULT_REMEDIATION_MODE,
      REMEDIATION_MODES,
    );
    const priceOverrides = validatePriceOverrides(props.priceOverridesUsdPerHour ?? {});
    const reservedConcurrentExecutions = validateIntegerInRange(
      'reservedConcurrentExecutions',
      props.reservedConcurrentExecutions ?? DEFAULT_INGEST_RESERVED_CONCURRENCY,
      1,
      MAX_INGEST_RESERVED_CONCURRENCY,
    );
    const ruleThresholds = validateRuleThresholds(props.ruleThresholds ?? {});
    const priceRates = props.priceRates === undefined ? undefined : validatePriceRates(props.priceRates);
    const metricsTeams = validateMetricsTeams(props.metricsTeams ?? []);

    const logs_ = encryptedLogGroup(this, {
      keyId: 'LogKey',
      groupId: 'LogGroup',
      description: 'gpu-sentinel: encrypts the ingest Lambda log group',
      retention: props.logRetention,
      removalPolicy: props.logRemovalPolicy,
    });
    this.logKey = logs_.key;
    this.logGroup = logs_.logGroup;
    this.role = new iam.Role(this, 'ServiceRole', {
      assumedBy: new iam.ServicePrincipal('lambda.amazonaws.com'),
      description: 'gpu-sentinel ingest Lambda: least privilege, written by hand',
    });
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['logs:CreateLogStream', 'logs:PutLogEvents'],
        resources: [this.logGroup.logGroupArn],
      }),
    );

    this.function = new nodejs.NodejsFunction(this, 'Function', {
      entry: props.entry,
      depsLockFilePath: props.depsLockFilePath,
      handler: 'handler',
      runtime: INGEST_RUNTIME,
      architecture: lambda.Architecture.ARM_64,
      memorySize: INGEST_MEMORY_MIB,
      timeout: Duration.seconds(INGEST_TIMEOUT_SECONDS),
      tracing: lambda.Tracing.ACTIVE,
      reservedConcurrentExecutions,
      role: this.role,
      logGroup: this.logGroup,
      description: 'gpu-sentinel: validates agent batches, stores them, alerts and remediates',
      bundling: {
        ...INGEST_BUNDLING,
        mainFields: [...INGEST_BUNDLING.mainFields],
        externalModules: [...INGEST_BUNDLING.externalModules],
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: splitModuleCommands,
        },
      },
      environment: {
        ...props.store.environment(),
        TOPIC_CRITICAL_ARN: props.topics.critical.topicArn,
        TOPIC_WARNING_ARN: props.topics.warning.topicArn,
        TOPIC_INFO_ARN: props.topics.info.topicArn,
        STATE_TABLE: props.state.table.tableName,
        REMEDIATION_MODE: this.remediationMode,
        PRICE_OVERRIDES: JSON.stringify(priceOverrides),
        ...(priceRates === undefined ? {} : { PRICE_RATES: JSON.stringify(priceRates) }),
        ...(props.agentRoleNames === undefined ? {} : { AGENT_ROLE_NAMES: props.agentRoleNames.join(',') }),
        RULE_THRESHOLDS: JSON.stringify(ruleThresholds),
        POWERTOOLS_SERVICE_NAME: INGEST_SERVICE_NAME,
        POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
        ...(metricsTeams.length === 0 ? {} : { METRICS_TEAMS: metricsTeams.join(',') }),
        NODE_OPTIONS: '--enable-source-maps',
      } satisfies LambdaEnvironment<'ingest'> & StackVariables<typeof COMMON_VARIABLES>,
    });

    props.store.grantWrite(this.role);
    props.topics.grantPublishAlerts(this.role);
    props.state.grantReadWrite(this.role);
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'EnrichAndVerifySenders',
        actions: [
          'autoscaling:DescribeAutoScalingInstances',
          'autoscaling:DescribeAutoScalingGroups',
          'ec2:DescribeInstances',
        ],
        resources: ['*'],
      }),
    );
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadInstanceProfileRoles',
        actions: ['iam:GetInstanceProfile'],
        resources: [`arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:instance-profile/*`],
      }),
    );
    if (this.remediationMode === 'replace') this.grantRemediation();

    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:instance-profile/*]',
      reason:
        'The sender check reads the role of whichever instance profile a GPU instance was launched with ' +
        '(profiles are created outside this stack); read-only, limited to this account.',
    });
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason:
        'Only actions without resource-level permissions use Resource "*": timestream:DescribeEndpoints ' +
        '(endpoint discovery, Timestream store only), autoscaling:DescribeAutoScalingInstances/DescribeAutoScalingGroups and ' +
        'ec2:DescribeInstances (server-side enrichment), and xray:PutTraceSegments/' +
        'PutTelemetryRecords (added by active tracing). Service Authorization Reference lists no resource type for them.',
    });
  }

  private grantRemediation(): void {
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['autoscaling:SetInstanceHealth'],
        resources: [autoScalingGroupArnPattern()],
        conditions: {
          StringNotEquals: { [`aws:ResourceTag/${REMEDIATION_OPT_OUT_TAG}`]: REMEDIATION_OPT_OUT_VALUE },
        },
      }),
    );
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ec2:CreateTags'],
        resources: [instanceArnPattern()],
        conditions: { 'ForAllValues:StringEquals': { 'aws:TagKeys': [QUARANTINE_TAG] } },
      }),
    );
    Validations.of(this.role).acknowledge(
      {
        id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:autoscaling:*:<AWS::AccountId>:autoScalingGroup:*:autoScalingGroupName/*]`,
        reason:
          'The instances to replace belong to groups created outside this stack (training clusters); ' +
          'SetInstanceHealth is limited to this account and denied on groups tagged gpu-sentinel:remediation=off.',
      },
      {
        id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ec2:*:<AWS::AccountId>:instance/*]',
        reason:
          'Quarantine tags go on any GPU instance of the account outside an Auto Scaling group; CreateTags is ' +
          'limited to the single tag key gpu-sentinel:quarantine (ForAllValues:StringEquals aws:TagKeys).',
      },
    );
  }
}

/** `arn:<partition>:autoscaling:*:<account>:autoScalingGroup:*:autoScalingGroupName/*` */
function autoScalingGroupArnPattern(): string {
  return `arn:${Aws.PARTITION}:autoscaling:*:${Aws.ACCOUNT_ID}:autoScalingGroup:*:autoScalingGroupName/*`;
}

/** `arn:<partition>:ec2:*:<account>:instance/*` */
function instanceArnPattern(): string {
  return `arn:${Aws.PARTITION}:ec2:*:${Aws.ACCOUNT_ID}:instance/*`;
}

/**
 * @param overrides - USD per instance-hour by instance type
 * @returns `overrides`
 * @throws {PropsValidationError} when a key is not an instance type or a value not a finite number ≥ 0
 */
export function validatePriceOverrides(
  overrides: Readonly<Record<string, number>>,
): Readonly<Record<string, number>> {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides)) {
    throw new PropsValidationError(
      'priceOverridesUsdPerHour',
      'an object of instance type to USD per hour',
      overrides,
    );
  }
  for (const [instanceType, usdPerHour] of Object.entries(overrides)) {
    validatePattern(
      'priceOverridesUsdPerHour',
      instanceType,
      INSTANCE_TYPE_PATTERN,
      'keys that are EC2 instance types like `p5.48xlarge`',
    );
    if (typeof usdPerHour !== 'number' || !Number.isFinite(usdPerHour) || usdPerHour < 0) {
      throw new PropsValidationError(
        `priceOverridesUsdPerHour.${instanceType}`,
        'a finite number >= 0 (USD per hour)',
        usdPerHour,
      );
    }
  }
  return overrides;
}

/**
 * Checks the deployment's price rates at synth with the parser the ingest Lambda runs at cold start
 * (`parsePriceRates`), so a bad rate fails `cdk synth` instead of every batch.
 *
 * @param rates - the `priceRates` prop
 * @returns `rates`
 * @throws {PropsValidationError} naming `priceRates.<section>[.<key>]` (or `priceRates`) and what came:
 *   an unknown section, a key that is not `type` or `type@region`, a rate that is not a finite
 *   number ≥ 0, or a `spot_discount` outside 0 ≤ d < 1
 */
export function validatePriceRates(rates: PriceRates): PriceRates {
  if (typeof rates !== 'object' || rates === null || Array.isArray(rates)) {
    throw new PropsValidationError(
      'priceRates',
      `an object with ${RATE_TABLES.join(', ')} and spot_discount`,
      rates,
    );
  }
  try {
    return parsePriceRates(JSON.stringify(rates));
  } catch (error) {
    if (!(error instanceof PriceOverridesError)) throw error;
    const expected =
      error.key === 'spot_discount'
        ? 'a fraction >= 0 and < 1 (0.6 = 60 % off on-demand)'
        : error.key.includes('.')
          ? 'a finite number >= 0 (USD per instance-hour) under a key `type` or `type@region` (`p5.48xlarge@us-east-2`)'
          : `one of ${RATE_TABLES.join(', ')} (objects of USD per instance-hour) or spot_discount`;
    throw new PropsValidationError(`priceRates.${error.key}`, expected, error.value);
  }
}

/**
 * Checks rule-threshold overrides at synth against the thresholds table (the same parser the ingest
 * Lambda runs at cold start): known names, finite numbers within each threshold's range.
 *
 * @param thresholds - threshold name → number
 * @returns `thresholds`
 * @throws {PropsValidationError} naming `ruleThresholds.<name>` (or `ruleThresholds`) and what came
 */
export function validateRuleThresholds(
  thresholds: Readonly<Record<string, number>>,
): Readonly<Record<string, number>> {
  if (typeof thresholds !== 'object' || thresholds === null || Array.isArray(thresholds)) {
    throw new PropsValidationError('ruleThresholds', 'an object of threshold name to number', thresholds);
  }
  try {
    parseRuleThresholds(JSON.stringify(thresholds));
  } catch (error) {
    if (!(error instanceof RuleThresholdsError)) throw error;
    const spec = THRESHOLD_TABLE[error.key as ThresholdName];
    throw new PropsValidationError(
      `ruleThresholds.${error.key}`,
      spec === undefined
        ? `a threshold of the table (${THRESHOLD_NAMES.join(', ')})`
        : `a number ${spec.min}..${spec.max} (${spec.unit})`,
      error.value,
    );
  }
  return thresholds;
}

/**
 * Checks the metric teams at synth with the parser the ingest Lambda runs at cold start.
 *
 * @param teams - team names
 * @returns `teams`
 * @throws {PropsValidationError} naming `metricsTeams` and what came
 */
export function validateMetricsTeams(teams: readonly string[]): readonly string[] {
  if (!Array.isArray(teams) || teams.some((t) => typeof t !== 'string' || t.includes(','))) {
    throw new PropsValidationError('metricsTeams', 'an array of team names without commas', teams);
  }
  try {
    parseMetricsTeams(teams.join(','));
  } catch (error) {
    if (!(error instanceof MetricsTeamsError)) throw error;
    throw new PropsValidationError(
      'metricsTeams',
      `at most ${MAX_METRIC_TEAMS} distinct names of 1–64 [A-Za-z0-9_.-:/@+], not \`other\` or \`untagged\``,
      teams,
    );
  }
  return teams;
}
