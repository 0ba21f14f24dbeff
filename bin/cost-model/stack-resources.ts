import { FLEET_SERVICE_NAME, INGEST_SERVICE_NAME, REPORT_SERVICE_NAME } from '../../lib/constants';

/**
 * What the cost model reads from the synthesized CloudFormation template of the stack, so it
 * cannot drift from it: every resource type the stack holds must be known here, billed (by the
 * month, or by use) or free, with the reason.
 */

/** A synthesized CloudFormation template, as far as the cost model reads it. */
export interface StackTemplate {
  readonly Resources: Readonly<
    Record<string, { readonly Type: string; readonly Properties?: Readonly<Record<string, unknown>> }>
  >;
}

/**
 * How each resource type the stack may hold is billed: `monthly` (a fee per resource-month, counted
 * from the template), `use` (billed per request, byte or run: priced from the deployment's traffic)
 * or `free` (no charge of its own), each with the reason.
 */
export const RESOURCE_BILLING = {
  'AWS::KMS::Key': ['monthly', 'key-month, and each of the first two yearly rotations'],
  'AWS::CloudWatch::Alarm': ['monthly', 'per metric the alarm reads'],
  'AWS::CloudWatch::Dashboard': ['monthly', 'per dashboard'],
  'AWS::ApiGateway::Stage': ['use', 'requests; detailed metrics (custom metrics) and X-Ray when enabled'],
  'AWS::Lambda::Function': ['use', 'requests and GB-seconds; X-Ray traces when active'],
  'AWS::Scheduler::Schedule': ['use', 'invocations of its runs'],
  'AWS::KinesisFirehose::DeliveryStream': ['use', 'GB ingested and converted, in 5 KB steps'],
  'AWS::S3::Bucket': ['use', 'GB-months stored, PUT and transition requests'],
  'AWS::Athena::WorkGroup': ['use', 'TB scanned, 10 MB minimum per query'],
  'AWS::Glue::Database': ['use', 'Data Catalog requests (storage free under a million objects)'],
  'AWS::Glue::Table': ['use', 'Data Catalog requests'],
  'AWS::Timestream::Database': ['use', 'writes, memory and magnetic store'],
  'AWS::Timestream::Table': ['use', 'writes, memory and magnetic store'],
  'AWS::DynamoDB::Table': ['use', 'on-demand read and write request units'],
  'AWS::SNS::Topic': ['use', 'publishes'],
  'AWS::SNS::Subscription': ['use', 'e-mail deliveries (the first 1,000 a month are free)'],
  'AWS::Logs::LogGroup': ['use', 'GB ingested and GB-months stored'],
  'AWS::Logs::LogStream': ['free', 'part of its log group'],
  'AWS::ApiGateway::RestApi': ['free', 'billed per request at its stage'],
  'AWS::ApiGateway::Resource': ['free', 'part of the REST API'],
  'AWS::ApiGateway::Method': ['free', 'part of the REST API'],
  'AWS::ApiGateway::RequestValidator': ['free', 'part of the REST API'],
  'AWS::ApiGateway::Deployment': ['free', 'part of the REST API'],
  'AWS::ApiGateway::Account': ['free', 'an account setting'],
  'AWS::Lambda::Permission': ['free', 'a resource policy statement'],
  'AWS::IAM::Role': ['free', 'IAM has no charge'],
  'AWS::IAM::Policy': ['free', 'IAM has no charge'],
  'AWS::IAM::ManagedPolicy': ['free', 'IAM has no charge'],
  'AWS::IAM::InstanceProfile': ['free', 'IAM has no charge'],
  'AWS::S3::BucketPolicy': ['free', 'part of its bucket'],
  'AWS::SNS::TopicPolicy': ['free', 'part of its topic'],
  'AWS::WAFv2::WebACLAssociation': ['free', 'the web ACL is the operator’s own, billed to it'],
  'AWS::CDK::Metadata': ['free', 'CDK bookkeeping, not an AWS resource'],
} as const satisfies Readonly<Record<string, readonly ['monthly' | 'use' | 'free', string]>>;

/** Thrown when the template holds a resource type {@link RESOURCE_BILLING} does not know. */
export class UnknownResourceTypeError extends Error {
  override readonly name = 'UnknownResourceTypeError';
  /** The resource types the cost model does not know. */
  readonly types: readonly string[];

  /** @param types - the unknown types */
  constructor(types: readonly string[]) {
    super(
      `The cost model does not know how ${types.map((t) => `\`${t}\``).join(', ')} is billed: add it to RESOURCE_BILLING (bin/cost-model/stack-resources.ts) and price it`,
    );
    this.types = types;
  }
}

/** Thrown when a schedule expression is not one the model can count runs of. */
export class ScheduleExpressionError extends Error {
  override readonly name = 'ScheduleExpressionError';
}

/** A Lambda function of the stack, as the cost model prices it. */
export interface StackFunction {
  /** Its logical ID. */
  readonly logicalId: string;
  /** Which one it is, by its Powertools service name. */
  readonly role: 'ingest' | 'fleet' | 'report';
  /** Memory, MiB. */
  readonly memoryMib: number;
  /** Whether X-Ray active tracing is on. */
  readonly traced: boolean;
}

/** The billed resources of a synthesized stack. */
export interface StackResources {
  /** Resources per type (every type is one of {@link RESOURCE_BILLING}). */
  readonly countsByType: Readonly<Record<string, number>>;
  /** Customer-managed KMS keys. */
  readonly kmsKeys: number;
  /** Of them, with automatic rotation on. */
  readonly kmsRotatedKeys: number;
  /** Metrics read by all alarms (a metric alarm reads one; a metric-math alarm one per metric). */
  readonly alarmMetrics: number;
  /** CloudWatch dashboards. */
  readonly dashboards: number;
  /** API methods with detailed (per-method) CloudWatch metrics on: each bills its metrics as custom ones. */
  readonly detailedMetricMethods: number;
  /** Whether a stage traces requests with X-Ray. */
  readonly stageTraced: boolean;
  /** The functions. */
  readonly functions: readonly StackFunction[];
  /** Runs per month of the `rate(…)` schedules (the fleet evaluator's). */
  readonly rateRunsPerMonth: number;
  /** Runs per month of the `cron(…)` schedules (the reports'). */
  readonly cronRunsPerMonth: number;
  /** Firehose delivery streams. */
  readonly deliveryStreams: number;
}

/** Hours in a month as AWS bills them. */
const HOURS_PER_MONTH = 730;

/**
 * Reads the billed resources of a synthesized stack.
 *
 * @param template - the template (`cdk synth` output, or `Template.fromStack(stack).toJSON()`)
 * @returns the counts the cost model prices
 * @throws {UnknownResourceTypeError} when a resource type is not in {@link RESOURCE_BILLING}
 * @throws {ScheduleExpressionError} when a schedule's expression is neither `rate(…)` nor a daily,
 *   weekly or monthly `cron(…)`
 */
export function readStackResources(template: StackTemplate): StackResources {
  const resources = Object.entries(template.Resources);
  const unknown = [...new Set(resources.map(([, r]) => r.Type))].filter((t) => !(t in RESOURCE_BILLING));
  if (unknown.length > 0) throw new UnknownResourceTypeError(unknown.sort());
  const countsByType: Record<string, number> = {};
  for (const [, r] of resources) countsByType[r.Type] = (countsByType[r.Type] ?? 0) + 1;
  const ofType = (type: string) => resources.filter(([, r]) => r.Type === type);
  const props = (r: { readonly Properties?: Readonly<Record<string, unknown>> }) => r.Properties ?? {};

  const stages = ofType('AWS::ApiGateway::Stage').map(([, r]) => props(r));
  const methods = ofType('AWS::ApiGateway::Method').length;
  const detailedStages = stages.filter((s) =>
    ((s.MethodSettings ?? []) as { MetricsEnabled?: boolean }[]).some((m) => m.MetricsEnabled === true),
  ).length;
  let rateRunsPerMonth = 0;
  let cronRunsPerMonth = 0;
  for (const [id, r] of ofType('AWS::Scheduler::Schedule')) {
    const expression = String(props(r).ScheduleExpression);
    const runs = runsPerMonth(expression, id);
    if (expression.startsWith('rate(')) rateRunsPerMonth += runs;
    else cronRunsPerMonth += runs;
  }
  return {
    countsByType,
    kmsKeys: ofType('AWS::KMS::Key').length,
    kmsRotatedKeys: ofType('AWS::KMS::Key').filter(([, r]) => props(r).EnableKeyRotation === true).length,
    alarmMetrics: ofType('AWS::CloudWatch::Alarm').reduce((n, [, r]) => {
      const metrics = props(r).Metrics as { MetricStat?: unknown }[] | undefined;
      return n + (metrics === undefined ? 1 : metrics.filter((m) => m.MetricStat !== undefined).length);
    }, 0),
    dashboards: ofType('AWS::CloudWatch::Dashboard').length,
    // MethodSettings `*` / `/*` apply to every method of the API.
    detailedMetricMethods: detailedStages > 0 ? methods : 0,
    stageTraced: stages.some((s) => s.TracingEnabled === true),
    functions: ofType('AWS::Lambda::Function').map(([logicalId, r]) => stackFunction(logicalId, props(r))),
    rateRunsPerMonth,
    cronRunsPerMonth,
    deliveryStreams: ofType('AWS::KinesisFirehose::DeliveryStream').length,
  };
}

/** A function of the template, told apart by its `POWERTOOLS_SERVICE_NAME`. */
function stackFunction(logicalId: string, props: Readonly<Record<string, unknown>>): StackFunction {
  const variables = ((props.Environment as { Variables?: Record<string, unknown> } | undefined)?.Variables ??
    {}) as Record<string, unknown>;
  const service = variables.POWERTOOLS_SERVICE_NAME;
  const roles = {
    [INGEST_SERVICE_NAME]: 'ingest',
    [FLEET_SERVICE_NAME]: 'fleet',
    [REPORT_SERVICE_NAME]: 'report',
  } as const;
  const role = roles[service as keyof typeof roles];
  if (role === undefined)
    throw new UnknownResourceTypeError([`AWS::Lambda::Function ${logicalId} (${String(service)})`]);
  return {
    logicalId,
    role,
    memoryMib: Number(props.MemorySize ?? 128),
    traced: (props.TracingConfig as { Mode?: string } | undefined)?.Mode === 'Active',
  };
}

/**
 * Runs per month of an EventBridge Scheduler expression: `rate(N minutes|hours|days)`, or a
 * `cron(min hour day-of-month month day-of-week year)` that runs once a day, once a week (a
 * day-of-week) or once a month (a day-of-month).
 */
function runsPerMonth(expression: string, id: string): number {
  const rate = /^rate\((\d+) (minute|minutes|hour|hours|day|days)\)$/.exec(expression);
  if (rate !== null) {
    const hours = { minute: 1 / 60, hour: 1, day: 24 }[
      rate[2]?.replace(/s$/, '') as 'minute' | 'hour' | 'day'
    ];
    return HOURS_PER_MONTH / (Number(rate[1]) * hours);
  }
  const cron = /^cron\((\d+) (\d+) (\S+) \* (\S+) \*\)$/.exec(expression);
  if (cron !== null) {
    const [, , , dayOfMonth, dayOfWeek] = cron;
    if (/^\d+$/.test(dayOfMonth ?? '') && dayOfWeek === '?') return 1;
    if (dayOfMonth === '?' && /^[A-Z]{3}$/.test(dayOfWeek ?? '')) return HOURS_PER_MONTH / 24 / 7;
    if (dayOfMonth === '*' && dayOfWeek === '?') return HOURS_PER_MONTH / 24;
  }
  throw new ScheduleExpressionError(
    `Expected schedule ${id} to run at a rate or daily, weekly or monthly, got \`${expression}\``,
  );
}
