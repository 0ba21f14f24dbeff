import type { Host } from '../contract';
import { JOB_TAG, MAX_ALERT_SUBJECT_CHARS, PROJECT_TAG, TEAM_TAG } from './constants';
import { describeGpu } from './rules/gpu-ref';
import type { Alert, AlertStatus, Finding } from './types';

/**
 * Turns findings into alert messages (docs/design.md §7): a stable id, a short ASCII subject, a plain-text body
 * (what, where, numbers, what to do) and SNS message attributes for subscription filter policies.
 */

/**
 * The stable alert id of a finding: `rule:instance_id[:gpu][#variant]`, gpu = the index, else the PCI bus
 * id, nothing for an instance-wide finding (docs/design.md §6); `#variant` when the finding has one (an Xid code:
 * `#xid94`), so two findings of one rule on one GPU never share a cooldown.
 *
 * @param finding - the finding
 * @returns e.g. `xid_fatal:i-0abc12345def67890:0000:19:00.0#xid79`, `ecc_dbe:i-0abc12345def67890:3`,
 *   `tensor_idle:i-0abc12345def67890`
 */
export function alertId(finding: Finding): string {
  const gpu = finding.gpu_index !== undefined ? String(finding.gpu_index) : finding.pci_bus_id;
  const base =
    gpu === undefined
      ? `${finding.rule}:${finding.instance_id}`
      : `${finding.rule}:${finding.instance_id}:${gpu}`;
  return finding.variant === undefined ? base : `${base}#${finding.variant}`;
}

const ASCII_REPLACEMENTS: Readonly<Record<string, string>> = {
  '−': '-',
  '–': '-',
  '—': '-',
  '×': 'x',
  '≥': '>=',
  '≤': '<=',
  '°': '',
  '…': '...',
  '‘': "'",
  '’': "'",
  '“': '"',
  '”': '"',
};

/**
 * Makes text one printable-ASCII line: known typographic characters get ASCII twins, line breaks and
 * tabs become spaces, anything else becomes `?`.
 *
 * @param text - any text
 * @returns the text with only characters 0x20–0x7E
 */
export function toAsciiLine(text: string): string {
  let out = '';
  for (const ch of text) {
    const mapped = ASCII_REPLACEMENTS[ch];
    if (mapped !== undefined) out += mapped;
    else if (ch === '\n' || ch === '\r' || ch === '\t') out += ' ';
    else out += /^[\x20-\x7e]$/.test(ch) ? ch : '?';
  }
  return out;
}

function where(finding: Finding): string {
  if (finding.gpu_index !== undefined && finding.pci_bus_id !== undefined)
    return `GPU ${finding.gpu_index} (${finding.pci_bus_id})`;
  if (finding.gpu_index !== undefined) return `GPU ${finding.gpu_index}`;
  if (finding.pci_bus_id !== undefined) return `GPU ${finding.pci_bus_id}`;
  return '';
}

/**
 * Builds the alert for a finding on a host.
 *
 * - `subject`: `[SEVERITY] rule instance_id [GPU g] instance_type: summary` (the summary's `on GPU …`
 *   dropped, the head names the GPU), printable ASCII only, at most {@link MAX_ALERT_SUBJECT_CHARS} characters (cut with `...`).
 * - `body`: plain text: what, when, where (instance, type, region/AZ, Auto Scaling group, GPU, team/job/
 *   project tags), the numbers (every evidence field), what to do, and the alert id.
 * - `attributes`: `severity`, `rule`, `instance_type`, `status`, and `team` / `job` only when the
 *   instance has the tag (so a team subscribes to its own jobs' alerts with a filter policy).
 * - `status` `resolved`: the subject starts `[RESOLVED]` and the body's first line says so.
 *
 * @param finding - the finding
 * @param host - the instance it is about (from the batch)
 * @param status - `firing` (default) or `resolved`
 * @returns the alert
 * @example
 * toAlert(finding, batch.host).subject; // "[CRITICAL] xid_fatal i-0abc… GPU 0000:19:00.0 p5.48xlarge: Xid 48 …"
 */
export function toAlert(finding: Finding, host: Host, status: AlertStatus = 'firing'): Alert {
  const id = alertId(finding);
  const gpu = where(finding);
  const head = `[${statusLabel(finding, status)}] ${finding.rule} ${finding.instance_id}${gpu === '' ? '' : ` ${gpu}`} ${finding.instance_type}: `;
  // The head already names the GPU: drop the summary's " on GPU …" so the subject keeps the key words.
  const subject = alertSubject(head + finding.summary.replace(` on ${describeGpu(finding)}`, ''));
  const tags = host.tags ?? {};
  const owner = ownerOf(tags);
  const body = alertBody(
    finding,
    status,
    [
      `  instance: ${finding.instance_id} (${finding.instance_type})`,
      `  region: ${host.region}${host.az === undefined ? '' : `, AZ ${host.az}`}`,
      `  Auto Scaling group: ${host.asg_name ?? 'none'}`,
      ...(gpu === '' ? [] : [`  GPU: ${gpu}`]),
      ...(host.lifecycle === undefined ? [] : [`  lifecycle: ${host.lifecycle}`]),
      ...(owner === '' ? [] : [`  owner: ${owner}`]),
    ],
    id,
  );
  return { id, finding, subject, body, attributes: alertAttributes(finding, status, tags), status };
}

/** `RESOLVED`, or the finding's severity in capitals: the subject's first bracket. */
export function statusLabel(finding: Finding, status: AlertStatus): string {
  return status === 'resolved' ? 'RESOLVED' : finding.severity.toUpperCase();
}

/**
 * A subject line: printable ASCII, at most {@link MAX_ALERT_SUBJECT_CHARS} characters (cut with `...`).
 * @param text - head and summary
 */
export function alertSubject(text: string): string {
  const subject = toAsciiLine(text);
  return subject.length > MAX_ALERT_SUBJECT_CHARS
    ? `${subject.slice(0, MAX_ALERT_SUBJECT_CHARS - 3)}...`
    : subject;
}

/**
 * The owner tags of an instance for people: `team vision, job train-42, project p`; empty without any.
 * @param tags - the instance's tags
 */
export function ownerOf(tags: Readonly<Record<string, string>>): string {
  return [TEAM_TAG, JOB_TAG, PROJECT_TAG]
    .flatMap((k) => (tags[k] === undefined ? [] : [`${k} ${tags[k]}`]))
    .join(', ');
}

/**
 * The plain-text body of an alert: status, what, severity, first seen, where (the lines given), the
 * numbers (every evidence field), what to do, and the alert id.
 *
 * @param finding - the finding
 * @param status - `firing` or `resolved`
 * @param whereLines - the "Where:" section's lines, indented two spaces
 * @param id - the alert id
 */
export function alertBody(
  finding: Finding,
  status: AlertStatus,
  whereLines: readonly string[],
  id: string,
): string {
  const numbers = Object.entries(finding.evidence).map(([k, v]) => `  ${k}: ${String(v)}`);
  return [
    ...(status === 'resolved' ? ['Status: RESOLVED, the condition no longer holds'] : []),
    `What: ${finding.summary}`,
    `Severity: ${finding.severity} (rule ${finding.rule}, action ${finding.action})`,
    `First seen: ${finding.at}`,
    '',
    'Where:',
    ...whereLines,
    '',
    'Numbers:',
    ...(numbers.length > 0 ? numbers : ['  (none)']),
    '',
    `What to do: ${finding.remedy}`,
    '',
    `Alert id: ${id}`,
  ].join('\n');
}

/**
 * SNS message attributes of an alert: `severity`, `rule`, `instance_type`, `status`, `xid_class` for
 * an Xid rule's alert (`hardware`, `application`, `notice`: docs/detection.md §3), and `team` / `job`
 * only when the tags have them (so a team subscribes to its own alerts with a filter policy).
 *
 * @param finding - the finding
 * @param status - `firing` or `resolved`
 * @param tags - the owner's tags (`team`, `job`)
 */
export function alertAttributes(
  finding: Finding,
  status: AlertStatus,
  tags: Readonly<Record<string, string>>,
): Record<string, string> {
  const attributes: Record<string, string> = {
    severity: finding.severity,
    rule: finding.rule,
    instance_type: finding.instance_type,
    status,
  };
  const xidClass = finding.evidence.xid_class;
  if (typeof xidClass === 'string') attributes.xid_class = xidClass;
  const team = tags[TEAM_TAG];
  if (team !== undefined) attributes.team = team;
  const job = tags[JOB_TAG];
  if (job !== undefined) attributes.job = job;
  return attributes;
}
