/**
 * The environment of the pipeline's Lambdas: every variable the CDK stack sets (lib/) and a
 * handler reads (lambdas/handlers/), written once. lib/ types what it sets with
 * {@link LambdaEnvironment}, the handlers read through these tables, and test/lib holds each
 * function's variables in the synthesized template to what its handler reads.
 *
 * A table maps each variable to its {@link VariableUse}; the comment above a variable says what it
 * holds. Nothing here reads an environment: the handlers do, once per cold start.
 */

/**
 * Who sets a variable and who reads it:
 * - `required`: the stack sets it; the handler fails at cold start, naming it, when it is missing;
 * - `optional`: the stack may set it; the handler has a default;
 * - `runtime`: the stack sets it for Node.js itself (`NODE_OPTIONS`); no handler reads it;
 * - `reserved`: the Lambda service sets it (`AWS_REGION`); the stack cannot, a handler may read it.
 */
export type VariableUse = 'required' | 'optional' | 'runtime' | 'reserved';

/** A table of variables: name → {@link VariableUse}. */
export type VariableTable = Readonly<Record<string, VariableUse>>;

/** The telemetry stores a deployment can use (docs/design.md §4); `athena` is open to every account. */
export const STORE_KINDS = ['athena', 'timestream'] as const;

/** One of {@link STORE_KINDS}. */
export type StoreKind = (typeof STORE_KINDS)[number];

/** The variable naming the deployed store, one of {@link STORE_KINDS}; every function that reads the store has it. */
export const STORE_VARIABLE = 'STORE';

/** What each store's adapter is built from, by {@link StoreKind} (besides {@link STORE_VARIABLE}). */
export const STORE_VARIABLES = {
  athena: {
    /** Firehose delivery stream of the `gpu_windows` table (its name, the stream's `Ref`). */
    FIREHOSE_GPU_STREAM: 'required',
    /** Firehose delivery stream of the `efa_windows` table. */
    FIREHOSE_EFA_STREAM: 'required',
    /** Firehose delivery stream of the `events` table. */
    FIREHOSE_EVENTS_STREAM: 'required',
    /** Glue database of the three tables, e.g. `gpu_sentinel`. */
    ATHENA_DATABASE: 'required',
    /** Athena workgroup the reads run in (results location and scan cap enforced there). */
    ATHENA_WORKGROUP: 'required',
  },
  timestream: {
    /** Timestream for LiveAnalytics database, e.g. `gpu_sentinel`. */
    TIMESTREAM_DATABASE: 'required',
    /** Table of GPU windows and the ledger, `gpu_windows`. */
    TIMESTREAM_GPU_TABLE: 'required',
    /** Table of EFA counter deltas, `efa_windows`. */
    TIMESTREAM_EFA_TABLE: 'required',
    /** Table of hardware events, `events`. */
    TIMESTREAM_EVENTS_TABLE: 'required',
  },
} as const satisfies Readonly<Record<StoreKind, VariableTable>>;

/** What every pipeline function gets, whatever it does. */
export const COMMON_VARIABLES = {
  /** `--enable-source-maps`: stack traces name the TypeScript file and line (the bundles ship source maps). */
  NODE_OPTIONS: 'runtime',
  /** Powertools service name on every log line, e.g. `gpu-sentinel-ingest`; without it the handler names itself. */
  POWERTOOLS_SERVICE_NAME: 'optional',
} as const satisfies VariableTable;

/** The SNS topics alerts go to, by severity; read by the functions that alert (the stack's `AlertTopics.alertEnvironment()`). */
export const ALERT_TOPIC_VARIABLES = {
  /** ARN of the `critical` alerts topic. */
  TOPIC_CRITICAL_ARN: 'required',
  /** ARN of the `warning` alerts topic. */
  TOPIC_WARNING_ARN: 'required',
  /** ARN of the `info` alerts topic. */
  TOPIC_INFO_ARN: 'required',
} as const satisfies VariableTable;

/** The state table, read by the functions that keep alert or remediation state (the stack's `RemediationState.environment()`). */
export const STATE_TABLE_VARIABLES = {
  /** The DynamoDB state table: alert leases and cooldowns, remediation records and budgets. */
  STATE_TABLE: 'required',
} as const satisfies VariableTable;

/** The settings both judging functions share, checked at synth and again at cold start. */
const JUDGING_VARIABLES = {
  /** Rule-threshold overrides, JSON `{ "<threshold name>": <number> }` over the thresholds table; default: none. */
  RULE_THRESHOLDS: 'optional',
  /** Teams with their own `Team` value on the CloudWatch metrics, comma-separated; default: none (`other`). */
  METRICS_TEAMS: 'optional',
} as const satisfies VariableTable;

/**
 * A Cost and Usage Report 2.0 export's Glue table, read through Athena (Athena store only): the
 * report prices each instance-hour from it, the fleet evaluator each instance's newest billed hour.
 */
const CUR_VARIABLES = {
  /** Glue database of a Cost and Usage Report 2.0 export (Athena store only; with `CUR_TABLE`); default: no CUR, stored prices. */
  CUR_DATABASE: 'optional',
  /** Glue table of that CUR 2.0 export (with `CUR_DATABASE`). */
  CUR_TABLE: 'optional',
} as const satisfies VariableTable;

/**
 * Each function's own variables (besides the store's and {@link COMMON_VARIABLES}), by function:
 * `ingest` (lambdas/handlers/ingest.ts), `fleetEvaluator` (lambdas/handlers/fleet-evaluator.ts),
 * `report` (lambdas/handlers/report.ts).
 */
export const LAMBDA_VARIABLES = {
  ingest: {
    ...ALERT_TOPIC_VARIABLES,
    ...STATE_TABLE_VARIABLES,
    ...JUDGING_VARIABLES,
    /** What the function does about broken instances, `off|notify|replace`; default `replace`. */
    REMEDIATION_MODE: 'optional',
    /** Grace period before a reboot or replacement, whole s in 0..86400 (`checkRemediationDelayS`); default 0 (act at once). */
    REMEDIATION_DELAY_S: 'optional',
    /** On-demand price overrides, JSON `{ "<instance type>": <USD per hour> }`; default: none. */
    PRICE_OVERRIDES: 'optional',
    /** Spot, Savings Plans and Capacity Block rates, JSON (see `parsePriceRates`); default: list prices. */
    PRICE_RATES: 'optional',
    /**
     * `ec2`: price a spot host that no spot rate prices at EC2's spot price history of its type, AZ
     * and hour (needs `ec2:DescribeSpotPriceHistory`); default: unset (`spot_discount`, or unpriced).
     */
    SPOT_PRICE_HISTORY: 'optional',
    /** Role names whose instance sessions may send, comma-separated; default: no role check in the handler. */
    AGENT_ROLE_NAMES: 'optional',
    /** CloudWatch namespace of the EMF metrics; default `GpuSentinel`. */
    POWERTOOLS_METRICS_NAMESPACE: 'optional',
  },
  fleetEvaluator: {
    ...ALERT_TOPIC_VARIABLES,
    ...STATE_TABLE_VARIABLES,
    ...JUDGING_VARIABLES,
    /** Regions whose running GPU instances are listed, comma-separated; default: the function's own region. */
    FLEET_REGIONS: 'optional',
    /** The function's own region (set by Lambda): the default of `FLEET_REGIONS`. */
    AWS_REGION: 'reserved',
    ...CUR_VARIABLES,
  },
  report: {
    /** The reports bucket the CSV and HTML files go to (under `reports/`). */
    REPORTS_BUCKET: 'required',
    /** ARN of the KMS key the reports bucket encrypts with (SSE-KMS on every put). */
    REPORTS_KEY_ARN: 'required',
    /** ARN of the `reports` topic the totals message goes to. */
    TOPIC_REPORTS_ARN: 'required',
    ...CUR_VARIABLES,
  },
} as const satisfies Readonly<Record<string, VariableTable>>;

/** A pipeline function: a key of {@link LAMBDA_VARIABLES}. */
export type LambdaName = keyof typeof LAMBDA_VARIABLES;

/** Every variable name any function or store knows. */
export type LambdaVariable =
  | typeof STORE_VARIABLE
  | { [K in StoreKind]: keyof (typeof STORE_VARIABLES)[K] }[StoreKind]
  | keyof typeof COMMON_VARIABLES
  | { [F in LambdaName]: keyof (typeof LAMBDA_VARIABLES)[F] }[LambdaName];

/** The names of `T` whose use is one of `U`. */
type NamesOf<T extends VariableTable, U extends VariableUse> = {
  [K in keyof T]: T[K] extends U ? K : never;
}[keyof T];

/**
 * What the stack may set from a table: its `required` variables (all of them), its `optional` and
 * `runtime` ones (any of them), never a `reserved` one or a name the table lacks.
 */
export type StackVariables<T extends VariableTable> = {
  readonly [K in NamesOf<T, 'required'>]: string;
} & { readonly [K in NamesOf<T, 'optional' | 'runtime'>]?: string };

/** What a handler reads from a table: its `required` variables as strings, `optional` and `reserved` ones as `string | undefined`. */
export type HandlerVariables<T extends VariableTable> = {
  readonly [K in NamesOf<T, 'required'>]: string;
} & { readonly [K in NamesOf<T, 'optional' | 'reserved'>]: string | undefined };

/** A store's variables as the stack sets them: `STORE` and that store's names. */
export type StoreEnvironment = {
  [K in StoreKind]: { readonly [STORE_VARIABLE]: K } & StackVariables<(typeof STORE_VARIABLES)[K]>;
}[StoreKind];

/**
 * The environment the stack gives function `F` (besides {@link COMMON_VARIABLES}, which the
 * function construct adds): the store's variables and the function's own.
 */
export type LambdaEnvironment<F extends LambdaName> = StoreEnvironment &
  StackVariables<(typeof LAMBDA_VARIABLES)[F]>;

/**
 * @param value - a string from the environment or a prop
 * @returns whether it names a store of {@link STORE_KINDS}
 */
export function isStoreKind(value: string): value is StoreKind {
  return (STORE_KINDS as readonly string[]).includes(value);
}
