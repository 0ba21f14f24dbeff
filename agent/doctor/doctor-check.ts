/**
 * One check of `gpu-sentinel doctor`: what it looked at, whether it holds, and the fix in words.
 */

/** The checks, in the order the doctor runs and prints them. */
export const DOCTOR_CHECK_IDS = [
  'nvml',
  'profiling',
  'kmsg',
  'efa',
  'imds',
  'credentials',
  'endpoint',
  'probe',
] as const;
/** Union of {@link DOCTOR_CHECK_IDS}. */
export type DoctorCheckId = (typeof DOCTOR_CHECK_IDS)[number];

/**
 * `pass` (✓), `fail` (✗: the agent cannot do this part of its work until it is fixed) or `skip`
 * (–: not applicable here, e.g. EFA on an instance type without it, or a check that depends on
 * one that failed).
 */
export const DOCTOR_STATUSES = ['pass', 'fail', 'skip'] as const;
/** Union of {@link DOCTOR_STATUSES}. */
export type DoctorStatus = (typeof DOCTOR_STATUSES)[number];

/** The result of one check. */
export interface DoctorCheckResult {
  /** Which check. */
  readonly id: DoctorCheckId;
  /** Its outcome. */
  readonly status: DoctorStatus;
  /** What was found, one line: versions, counts, the caller, the API's answer. */
  readonly detail: string;
  /** For a failure (and some skips): what to do, in words, naming the setting or command. */
  readonly fix?: string;
}

/** The printed mark of each status. */
export const DOCTOR_MARKS: Readonly<Record<DoctorStatus, string>> = { pass: '✓', fail: '✗', skip: '–' };

/** The printed title of each check. */
export const DOCTOR_TITLES: Readonly<Record<DoctorCheckId, string>> = {
  nvml: 'NVML loads',
  profiling: 'Profiling counters (GPM or dcgm-exporter)',
  kmsg: 'Kernel log readable',
  efa: 'EFA counters in sysfs',
  imds: 'IMDSv2 and instance identity',
  credentials: "Credentials are the agent role's instance credentials",
  endpoint: 'API endpoint answers',
  probe: 'Signed probe admitted by the API',
};

/**
 * Renders results as the doctor prints them: one line per check (`✓ title: detail`), the fix
 * indented under a failure or skip that has one, then a summary line.
 *
 * @param results - in run order
 * @returns the text, ending with a newline
 */
export function renderDoctorReport(results: readonly DoctorCheckResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`${DOCTOR_MARKS[r.status]} ${DOCTOR_TITLES[r.id]}: ${r.detail}`);
    if (r.fix !== undefined && r.status !== 'pass') lines.push(`    fix: ${r.fix}`);
  }
  const failed = results.filter((r) => r.status === 'fail').length;
  lines.push(
    failed === 0 ? `${results.length} checks, none failed` : `${results.length} checks, ${failed} failed`,
  );
  return `${lines.join('\n')}\n`;
}
