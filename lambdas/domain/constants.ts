/**
 * Thresholds and fixed numbers of the domain room, one doc line each with unit and source.
 */

/** Efficiency below which a GPU counts as idle (or held idle), 0..1 fraction. Source: docs/design.md §5. */
export const IDLE_EFFICIENCY_BELOW = 0.01;

/**
 * NVML `utilization.gpu` (share of sample periods in which a kernel ran) at or above which a GPU whose
 * SM activity reads idle is still running kernels, 0..1 fraction: launch-bound work, not an idle or
 * held-idle GPU. Applies only where SM activity is measured (`sm_active`). Source: the H200 capture
 * (test/fixtures/captured/): one synchronised 1-element kernel at a time reads `gpu_util` 0.11 with
 * `sm_active` 0.000, an idle GPU 0 and a GPU holding 40 GiB with no kernels 0; 5 % is kernels in one
 * sample period of twenty.
 */
export const KERNELS_RUNNING_GPU_UTIL_AT_LEAST = 0.05;

/** Efficiency at or above which a window is classed `none` (no waste worth naming), 0..1 fraction. Source: this module's choice (docs/design.md §5 names no upper class); `underused_usd` is still cost × (1 − efficiency). */
export const FULLY_USED_EFFICIENCY_AT_LEAST = 0.99;

/** Seconds per hour, s/h: prices are per hour, windows in seconds. */
export const SECONDS_PER_HOUR = 3600;

/** Milliseconds per second, ms/s. */
export const MS_PER_SECOND = 1000;

/** Instance tag that opts an instance (or its group) out of remediation when its value is `off`. Source: docs/design.md §8. */
export const REMEDIATION_OPT_OUT_TAG = 'gpu-sentinel:remediation';

/** Instance tag put on an instance outside an Auto Scaling group instead of replacing it (`=<rule>`). Source: docs/design.md §8. */
export const QUARANTINE_TAG = 'gpu-sentinel:quarantine';

/** Instance tag naming the owning team (filters alert subscriptions). Source: docs/design.md §3/§7. */
export const TEAM_TAG = 'team';

/** Instance tag naming the job. Source: docs/design.md §3. */
export const JOB_TAG = 'job';

/** Instance tag naming the project. Source: docs/design.md §3. */
export const PROJECT_TAG = 'project';

/** Longest alert subject, characters (the SNS email subject limit). Source: SNS Publish `Subject` (< 100 chars). */
export const MAX_ALERT_SUBJECT_CHARS = 100;

/** Most distinct pids / process names listed in a finding's evidence, entries (keeps alerts readable). */
export const MAX_EVIDENCE_LIST_ITEMS = 10;

/** Longest free text (event detail) copied into a finding, characters. */
export const MAX_EVIDENCE_TEXT_CHARS = 240;

/**
 * EC2 instance families with NVIDIA GPUs that an agent may report from: `p*` (P3–P6, e.g.
 * `p5.48xlarge`) and `g*` with a generation digit (G4dn–G6e, `g5g`, `gr6`), as EC2 names
 * accelerated-computing instance types. Trainium/Inferentia (`trn*`, `inf*`) carry no NVIDIA GPU.
 * Source: EC2 User Guide, "Accelerated computing instances" and instance type naming conventions.
 */
export const GPU_INSTANCE_TYPE_PATTERN = /^(p\d|g\d|gr\d)[a-z0-9-]*\.[a-z0-9-]+$/;

/**
 * EC2 instance states in which an instance can still speak for itself: running, or winding down
 * (its agent sends `agent_stop` / spot notices while it stops). `pending`, `stopped` and
 * `terminated` instances run no agent. Source: EC2 `InstanceState.Name` values.
 */
export const SENDING_INSTANCE_STATES: readonly string[] = ['running', 'stopping', 'shutting-down'];

/** Seconds a remediation reservation stays pending before another invocation may take it over, s: the longest a Lambda can run (900 s, AWS Lambda quotas), so no live holder loses it. */
export const REMEDIATION_LEASE_S = 900;

/**
 * How far back the fleet evaluator asks the store when each instance last sent, s: 1 h. An instance
 * not seen in it reads "never seen" to `agent_silent`; longer spans cost Athena more bytes scanned.
 */
export const FLEET_LAST_SEEN_LOOKBACK_S = 3600;

/**
 * How far back the fleet evaluator looks in a Cost and Usage Report 2.0 for each instance's newest
 * billed hour, s: 3 days. Data Exports refreshes a CUR 2.0 export at least once a day (AWS Data
 * Exports user guide, "Export refreshing"), so the newest hours lag up to a day; 3 days outlast a
 * missed refresh, and bound the CUR bytes Athena reads (the filter on `line_item_usage_start_date`
 * skips the Parquet row groups of other days).
 */
export const FLEET_CUR_LOOKBACK_S = 3 * 86_400;

/** Default re-send interval of a still-firing alert, s: once an hour. Source: docs/design.md §6 (sent again after a cooldown). */
export const DEFAULT_ALERT_COOLDOWN_S = 3600;

/**
 * How long an alert lease lasts, s: longer than the ingest Lambda's timeout, so a lease is only ever
 * taken over from an invocation that crashed between lease and publish; its alert then goes out with
 * the next batch that still has the finding.
 */
export const ALERT_LEASE_S = 120;

/**
 * After an alert resolves, a return of its condition is sent as a new episode once this many
 * seconds have passed, s (capped at the cooldown): one horizon, so a metric hovering at its threshold
 * sends at most one fire/resolve pair per 15 min instead of one per batch.
 */
export const ALERT_REARM_S = 900;
