import type { RemovalPolicy } from 'aws-cdk-lib';
import { Aws, Token, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import type * as logs from 'aws-cdk-lib/aws-logs';
import type { Construct } from 'constructs';
import { METRICS_NAMESPACE } from '../lambdas/domain/cloudwatch-metrics';
import { QUARANTINE_TAG, REMEDIATION_OPT_OUT_TAG } from '../lambdas/domain/constants';
import type { LambdaEnvironment } from '../lambdas/domain/lambda-environment';
import type { PriceRates } from '../lambdas/domain/pricing';
import { checkRemediationDelayS } from '../lambdas/domain/remediation-grace';
import type { AlertTopics } from './alert-topics';
import type { SplitBuild } from './build-split-modules';
import {
  INGEST_MEMORY_MIB,
  INGEST_SERVICE_NAME,
  INGEST_TIMEOUT_SECONDS,
  REMEDIATION_OPT_OUT_VALUE,
  RESERVED_CONCURRENCY_RULE,
} from './constants';
import { LAMBDA_BUNDLING, LAMBDA_EXTERNAL_MODULES } from './lambda-bundling';
import { PropsValidationError } from './props-validation-error';
import { DEFAULT_REMEDIATION_MODE, REMEDIATION_MODES, type RemediationMode } from './remediation-mode';
import type { RemediationState } from './remediation-state';
import { SentinelFunction } from './sentinel-function';
import { starResourceReason } from './star-resource-reason';
import type { TelemetryStoreResources } from './telemetry-store-resources';
import {
  validateMetricsTeams,
  validatePriceOverrides,
  validatePriceRates,
  validateRuleThresholds,
} from './validate-lambda-settings';
import { validateOneOf } from './validate-props';

/**
 * Handler modules the ingest bundle ships as files of their own, loaded with `import()` on first
 * use: what only some requests need and is too big to parse at every cold start. `specifier` is
 * the import path exactly as the handler writes it (kept out of the main bundle), `entry` the
 * module's source relative to the project root, `outfile` the file next to `index.js`.
 * `make-instance-apis` holds the EC2, Auto Scaling and IAM clients (EC2's alone is ≈ 0.9 MB
 * minified), needed for the first lookup of an instance and for remediation only; the two stores'
 * makers hold Firehose + Athena and Timestream Write + Query, of which a deployment loads one, on
 * its first write; `make-sns-sinks` holds SNS, loaded on the first alert. Leaving the last three
 * out of `index.js` took 6 MB off its RSS after module init (86.2 → 80.3 MB, Node.js 24; BENCHMARKS.md).
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
  {
    specifier: './make-athena-store.js',
    entry: 'lambdas/handlers/make-athena-store.ts',
    outfile: 'make-athena-store.js',
  },
  {
    specifier: './make-timestream-store.js',
    entry: 'lambdas/handlers/make-timestream-store.ts',
    outfile: 'make-timestream-store.js',
  },
  {
    specifier: './make-sns-sinks.js',
    entry: 'lambdas/handlers/make-sns-sinks.ts',
    outfile: 'make-sns-sinks.js',
  },
];

/**
 * How the ingest Lambda is bundled: `LAMBDA_BUNDLING` (lambda-bundling.ts), with the
 * {@link INGEST_SPLIT_MODULES} also left out of `index.js` (built next to it by the
 * `afterBundling` hook, {@link splitModuleCommands}).
 */
export const INGEST_BUNDLING = {
  ...LAMBDA_BUNDLING,
  externalModules: [...LAMBDA_EXTERNAL_MODULES, ...INGEST_SPLIT_MODULES.map((m) => m.specifier)],
} as const;

/**
 * The command line that builds the {@link INGEST_SPLIT_MODULES} next to the bundle, with the
 * settings of {@link INGEST_BUNDLING} (run after bundling, in the bundling environment):
 * `lib/build-split-modules.ts`, esbuild with the plugin that lets the AWS SDK's schema modules be
 * tree-shaken (`lib/literal-schema-keys.ts`: EC2's module 0.91 → 0.38 MB).
 *
 * @param inputDir - the project root as the bundling environment sees it
 * @param outputDir - the asset folder holding `index.js`
 * @returns the shell commands (one)
 */
export function splitModuleCommands(inputDir: string, outputDir: string): string[] {
  const spec: SplitBuild = {
    inputDir,
    outputDir,
    modules: INGEST_SPLIT_MODULES.map(({ entry, outfile }) => ({ entry, outfile })),
    format: `${INGEST_BUNDLING.format}` as SplitBuild['format'],
    target: INGEST_BUNDLING.target,
    mainFields: INGEST_BUNDLING.mainFields,
    external: LAMBDA_EXTERNAL_MODULES,
  };
  const arg = Buffer.from(JSON.stringify(spec)).toString('base64');
  return [`npx --no-install tsx "${inputDir}/lib/build-split-modules.ts" ${arg}`];
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
   * Only `replace` grants `autoscaling:SetInstanceHealth`, `ec2:CreateTags` and `ec2:RebootInstances`.
   * @default 'replace'
   */
  readonly remediationMode?: RemediationMode;
  /**
   * Grace period before a reboot or replacement, whole s in 0..86400: announced first, carried out
   * when due unless the instance recovered or was tagged `gpu-sentinel:remediation=off` (docs/remediation.md).
   * @default 0 (act at once)
   */
  readonly remediationDelayS?: number;
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
   * Teams whose `team` tag becomes their own `Team` value on the CloudWatch metrics (`WastedUsd` by
   * Team); every other team is counted as `other`, no tag as `untagged`, so the
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
   * X-Ray active tracing of the function: a trace per invocation ($5 per million recorded, AWS X-Ray pricing
   * page).
   * @default false
   */
  readonly tracing?: boolean;
  /**
   * What happens to the log group when the stack is deleted.
   * @default RemovalPolicy.RETAIN
   */
  readonly logRemovalPolicy?: RemovalPolicy;
  /**
   * Reserved concurrency of the function, executions, integer ≥ 0: the most batches processed at
   * once (a throttled invocation fails the request and the agent retries it from its spool), and a share of the account's
   * Lambda concurrency no other function can take. `0` reserves nothing (a reserved concurrency of
   * 0 would stop the function). The account's Lambda concurrency quota must be ≥ N + 100 (Lambda
   * keeps 100 unreserved, `LAMBDA_UNRESERVED_CONCURRENCY_MIN`), or CloudFormation rolls back.
   * @default - none: the function shares the account's unreserved pool, so the stack deploys in an
   *   account whose quota is still the 10 of a new account
   */
  readonly reservedConcurrentExecutions?: number;
  /**
   * Price a spot host that no `priceRates.spot` rate prices at EC2's spot price history of its
   * instance type, Availability Zone and hour (`SPOT_PRICE_HISTORY=ec2`; docs/finance.md, "Spot
   * without a CUR"), and grant `ec2:DescribeSpotPriceHistory` on `*`, the only resource that action
   * takes (Service Authorization Reference, "Actions, resources, and condition keys for Amazon EC2":
   * no resource types). `false` leaves spot hosts to `spot_discount`, else unpriced.
   * @default true
   */
  readonly spotPriceHistory?: boolean;
}

/**
 * The ingest Lambda (docs/design.md §1): validates a batch, computes the waste ledger, writes the
 * telemetry store (Firehose by default, or Timestream), evaluates the per-instance rules, publishes
 * alerts and remediates. A {@link SentinelFunction} (arm64, Node.js 24, X-Ray when `tracing` is on, its own
 * encrypted log group and a role written by hand, no AWS managed policy) of 512 MiB, 25 s, no
 * reserved concurrency unless asked, bundled by esbuild (CJS, minified, source maps) with its split modules
 * built next to `index.js`. Its role may:
 * - `logs:CreateLogStream`, `logs:PutLogEvents` on its own log group;
 * - the store's write permission only: `firehose:PutRecordBatch` on the three delivery streams, or
 *   `timestream:WriteRecords` on the three tables and `timestream:DescribeEndpoints` on `*`;
 * - `sns:Publish` on critical/warning/info, `kms:GenerateDataKey`/`kms:Decrypt` on their key;
 * - `dynamodb:GetItem/PutItem/UpdateItem/DeleteItem/Query` on the state table (a transaction's
 *   items are authorized as these actions);
 * - `autoscaling:DescribeAutoScalingInstances`, `autoscaling:DescribeAutoScalingGroups` and
 *   `ec2:DescribeInstances` on `*` (server-side enrichment and the sender check; these actions
 *   support no resource-level permissions);
 * - unless `spotPriceHistory` is `false`: `ec2:DescribeSpotPriceHistory` on `*` (spot prices; no
 *   resource-level permissions either);
 * - `iam:GetInstanceProfile` on the account's instance profiles (the sender check compares the
 *   instance profile's role with the caller's);
 * - in `replace` mode: `autoscaling:SetInstanceHealth` on every Auto Scaling group of the account
 *   unless the group is tagged `gpu-sentinel:remediation=off` (condition
 *   `StringNotEquals aws:ResourceTag/gpu-sentinel:remediation = off`: groups need no tag to be
 *   managed, and the opt-out is enforced by IAM as well as by the domain policy), and
 *   `ec2:CreateTags` on the account's instances limited to the tag key `gpu-sentinel:quarantine`,
 *   and `ec2:RebootInstances` on the account's instances unless tagged `gpu-sentinel:remediation=off`;
 * - with `tracing`: `xray:PutTraceSegments`, `xray:PutTelemetryRecords` (added by active tracing, `*`).
 * ARNs use region `*`: agents in any region may report to this API.
 *
 * Construct IDs are a contract: those of {@link SentinelFunction} (`LogGroup`,
 * `ServiceRole`, `Function`).
 *
 * @example
 * new IngestFunction(this, 'IngestFunction', { entry, depsLockFilePath, store, topics, state });
 */
export class IngestFunction extends SentinelFunction {
  /** The remediation mode in effect. */
  readonly remediationMode: RemediationMode;

  /**
   * @throws {PropsValidationError} when `remediationMode` is not `off|notify|replace`, a price
   *   override has a bad instance type or a price that is not a finite number ≥ 0, a price rate is
   *   malformed (see `validatePriceRates`), a rule threshold is unknown or out of its range,
   *   `reservedConcurrentExecutions` is not an integer ≥ 0, or `metricsTeams` is too long or
   *   has a bad name
   */
  constructor(scope: Construct, id: string, props: IngestFunctionProps) {
    super(scope, id, {
      entry: props.entry,
      depsLockFilePath: props.depsLockFilePath,
      label: 'ingest Lambda',
      description: 'gpu-sentinel: validates agent batches, stores them, alerts and remediates',
      serviceName: INGEST_SERVICE_NAME,
      memoryMiB: INGEST_MEMORY_MIB,
      timeoutSeconds: INGEST_TIMEOUT_SECONDS,
      reservedConcurrentExecutions: ingestReservedConcurrency(props.reservedConcurrentExecutions),
      bundling: {
        ...INGEST_BUNDLING,
        commandHooks: {
          beforeBundling: () => [],
          beforeInstall: () => [],
          afterBundling: splitModuleCommands,
        },
      },
      logRetention: props.logRetention,
      logRemovalPolicy: props.logRemovalPolicy,
      tracing: props.tracing,
    });
    this.remediationMode = validateOneOf(
      'remediationMode',
      props.remediationMode ?? DEFAULT_REMEDIATION_MODE,
      REMEDIATION_MODES,
    );
    this.addEnvironment(this.ingestEnvironment(props));
    props.store.grantWrite(this);
    props.topics.grantPublishAlerts(this);
    props.state.grantReadWrite(this);
    this.grantSenderChecks(props.store, props.spotPriceHistory ?? true);
    if (this.remediationMode === 'replace') this.grantRemediation();
  }

  /**
   * The function's variables (`LAMBDA_VARIABLES.ingest` of lambdas/domain/lambda-environment.ts),
   * each setting checked at synth by the parser the Lambda runs at cold start.
   */
  private ingestEnvironment(props: IngestFunctionProps): LambdaEnvironment<'ingest'> {
    const priceRates = props.priceRates === undefined ? undefined : validatePriceRates(props.priceRates);
    const metricsTeams = validateMetricsTeams(props.metricsTeams ?? []);
    return {
      ...props.store.environment(),
      ...props.topics.alertEnvironment(),
      ...props.state.environment(),
      REMEDIATION_MODE: this.remediationMode,
      ...(props.remediationDelayS ? { REMEDIATION_DELAY_S: String(delayS(props.remediationDelayS)) } : {}),
      PRICE_OVERRIDES: JSON.stringify(validatePriceOverrides(props.priceOverridesUsdPerHour ?? {})),
      ...(priceRates === undefined ? {} : { PRICE_RATES: JSON.stringify(priceRates) }),
      ...(props.agentRoleNames === undefined ? {} : { AGENT_ROLE_NAMES: props.agentRoleNames.join(',') }),
      RULE_THRESHOLDS: JSON.stringify(validateRuleThresholds(props.ruleThresholds ?? {})),
      POWERTOOLS_METRICS_NAMESPACE: METRICS_NAMESPACE,
      ...(metricsTeams.length === 0 ? {} : { METRICS_TEAMS: metricsTeams.join(',') }),
      ...((props.spotPriceHistory ?? true) ? { SPOT_PRICE_HISTORY: 'ec2' } : {}),
    };
  }

  /**
   * Server-side enrichment and the sender check: `autoscaling:DescribeAutoScalingInstances`,
   * `autoscaling:DescribeAutoScalingGroups`, `ec2:DescribeInstances` on `*` (no resource-level
   * permissions exist for them) and `iam:GetInstanceProfile` on the account's instance profiles;
   * with `spotPriceHistory`, `ec2:DescribeSpotPriceHistory` on `*` (no resource types either).
   */
  private grantSenderChecks(store: TelemetryStoreResources, spotPriceHistory: boolean): void {
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
    if (spotPriceHistory) {
      this.role.addToPrincipalPolicy(
        new iam.PolicyStatement({
          sid: 'ReadSpotPriceHistory',
          actions: ['ec2:DescribeSpotPriceHistory'],
          resources: ['*'],
        }),
      );
    }
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        sid: 'ReadInstanceProfileRoles',
        actions: ['iam:GetInstanceProfile'],
        resources: [`arn:${Aws.PARTITION}:iam::${Aws.ACCOUNT_ID}:instance-profile/*`],
      }),
    );
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:iam::<AWS::AccountId>:instance-profile/*]',
      reason:
        'The sender check reads the role of whichever instance profile a GPU instance was launched with ' +
        '(profiles are created outside this stack); read-only, limited to this account.',
    });
    Validations.of(this.role).acknowledge({
      id: 'AwsSolutions-IAM5[Resource::*]',
      reason: starResourceReason(
        store.kind,
        'autoscaling:DescribeAutoScalingInstances/DescribeAutoScalingGroups and ec2:DescribeInstances (server-side enrichment)',
        ...(spotPriceHistory
          ? [
              'ec2:DescribeSpotPriceHistory (spot prices of the hosts no configured rate prices; the action takes no resource types)',
            ]
          : []),
      ),
    });
  }

  /**
   * `replace` mode: `autoscaling:SetInstanceHealth` on the account's Auto Scaling groups unless
   * tagged `gpu-sentinel:remediation=off`, `ec2:CreateTags` of the quarantine tag key only, and
   * `ec2:RebootInstances` on instances not tagged `gpu-sentinel:remediation=off`.
   */
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
    // The ladder's first step (docs/remediation.md): a reboot resets every GPU; not on opted-out instances.
    this.role.addToPrincipalPolicy(
      new iam.PolicyStatement({
        actions: ['ec2:RebootInstances'],
        resources: [instanceArnPattern()],
        conditions: {
          StringNotEquals: { [`aws:ResourceTag/${REMEDIATION_OPT_OUT_TAG}`]: REMEDIATION_OPT_OUT_VALUE },
        },
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
          'limited to the single tag key gpu-sentinel:quarantine (ForAllValues:StringEquals aws:TagKeys); ' +
          'RebootInstances (a reboot resets every GPU) is denied on instances tagged gpu-sentinel:remediation=off.',
      },
    );
  }
}

/** `arn:<partition>:autoscaling:*:<account>:autoScalingGroup:*:autoScalingGroupName/*` */
/**
 * The reserved concurrency to set: `undefined` (reserve nothing) for unset or `0`.
 *
 * @param value - executions, integer ≥ 0
 * @returns `value` when ≥ 1, else `undefined`
 * @throws {PropsValidationError} when `value` is not an integer ≥ 0, saying the account's quota must be ≥ N + 100
 */
function ingestReservedConcurrency(value: number | undefined): number | undefined {
  if (value === undefined || Token.isUnresolved(value)) return value;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0) {
    throw new PropsValidationError('reservedConcurrentExecutions', RESERVED_CONCURRENCY_RULE, value);
  }
  return value === 0 ? undefined : value;
}

function autoScalingGroupArnPattern(): string {
  return `arn:${Aws.PARTITION}:autoscaling:*:${Aws.ACCOUNT_ID}:autoScalingGroup:*:autoScalingGroupName/*`;
}

/** `arn:<partition>:ec2:*:<account>:instance/*` */
function instanceArnPattern(): string {
  return `arn:${Aws.PARTITION}:ec2:*:${Aws.ACCOUNT_ID}:instance/*`;
}

/** `remediationDelayS` checked by the Lambda's own parser, as a synth error naming the prop. */
function delayS(value: number): number {
  try {
    return checkRemediationDelayS(value, 'remediationDelayS');
  } catch (error) {
    throw new PropsValidationError('remediationDelayS', 'whole seconds in 0..86400', value, { cause: error });
  }
}
