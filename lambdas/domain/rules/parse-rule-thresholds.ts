import { RuleThresholdsError, XidPolicyError } from '../errors';
import { readOverrideDocument } from '../override-document';
import { DEFAULT_XID_POLICY, withXidOverrides, type XidPolicy, type XidPolicyEntry } from '../xid-policy';
import { DEFAULT_RULE_CONTEXT, type RuleContext } from './rule-context';
import {
  DEFAULT_THRESHOLDS,
  THRESHOLD_NAMES,
  THRESHOLD_TABLE,
  type ThresholdName,
  type Thresholds,
} from './thresholds';

/**
 * Parses a deployment's rule-threshold overrides (the ingest Lambda's `RULE_THRESHOLDS`, local mode's
 * `--rules FILE`) and merges them over {@link DEFAULT_THRESHOLDS}. Only the names of `THRESHOLD_TABLE`
 * are accepted, each a finite number within its table range, so a typo is refused instead of ignored.
 *
 * @param json - `{ "<threshold name>": <number> }`; `undefined` or blank means the defaults
 * @returns the full thresholds, frozen
 * @throws {RuleThresholdsError} when the text is not JSON, not an object, a key is not a threshold
 *   name, or a value is not a finite number in the threshold's range; the error names the key and value
 * @example
 * parseRuleThresholds('{"fakeLoadGpuUtilAtLeast": 0.8, "minHorizonSpanS": 600}').fakeLoadGpuUtilAtLeast; // 0.8
 */
export function parseRuleThresholds(json: string | undefined): Thresholds {
  const entries = readOverrideDocument(
    json,
    'rule thresholds',
    '{"fakeLoadGpuUtilAtLeast": 0.8}',
    RuleThresholdsError,
  );
  if (entries === undefined) return DEFAULT_THRESHOLDS;
  const out: Record<ThresholdName, number> = { ...DEFAULT_THRESHOLDS };
  for (const [key, given] of entries) {
    if (!(THRESHOLD_NAMES as readonly string[]).includes(key)) {
      throw new RuleThresholdsError(
        key,
        given,
        `Expected rule threshold names from the thresholds table (${THRESHOLD_NAMES.join(', ')}), got \`${key}\`.`,
      );
    }
    const spec = THRESHOLD_TABLE[key as ThresholdName];
    if (typeof given !== 'number' || !Number.isFinite(given) || given < spec.min || given > spec.max) {
      throw new RuleThresholdsError(
        key,
        given,
        `Expected \`${key}\` to be a number ${spec.min}..${spec.max} (${spec.unit}), got \`${JSON.stringify(given)}\` (${typeof given}).`,
      );
    }
    out[key as ThresholdName] = given;
  }
  return Object.freeze(out);
}

/** The fields of an Xid policy entry an override may set. */
const XID_ENTRY_FIELDS: readonly (keyof XidPolicyEntry)[] = [
  'action',
  'severity',
  'count',
  'window_s',
  'replace_count',
  'replace_window_s',
  'burst_s',
  'class',
  'mnemonic',
  'meaning',
  'remedy',
  'immediate',
  'investigatory',
  'source',
];

/**
 * Reads the `xid` key of a rules document: `{ "<code>": { "<entry field>": value } }`, merged over
 * {@link DEFAULT_XID_POLICY} by `withXidOverrides` (which checks each value).
 *
 * @param value - the `xid` key's value
 * @returns the merged policy
 * @throws {XidPolicyError} naming the code and field when it is not an object of objects or names an unknown field
 */
function xidPolicyFrom(value: unknown): XidPolicy {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new XidPolicyError(
      0,
      'xid',
      value,
      'Expected `xid` to be an object of Xid code → entry fields, e.g. {"120": {"replace_count": 3}}.',
    );
  const overrides: Record<number, Partial<XidPolicyEntry>> = {};
  for (const [code, patch] of Object.entries(value)) {
    const xid = Number(code);
    if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
      throw new XidPolicyError(
        xid,
        'xid',
        patch,
        `Expected xid.${code} to be an object of entry fields, got \`${JSON.stringify(patch)}\`.`,
      );
    for (const field of Object.keys(patch)) {
      if (!(XID_ENTRY_FIELDS as readonly string[]).includes(field))
        throw new XidPolicyError(
          xid,
          field,
          (patch as Record<string, unknown>)[field],
          `Expected xid.${code} fields from ${XID_ENTRY_FIELDS.join(', ')}, got \`${field}\`.`,
        );
    }
    overrides[xid] = patch as Partial<XidPolicyEntry>;
  }
  return withXidOverrides(DEFAULT_XID_POLICY, overrides);
}

/**
 * Parses a deployment's rules document — threshold overrides ({@link parseRuleThresholds}) plus an
 * optional `xid` key of per-code Xid policy overrides — into a whole rule context.
 *
 * @param json - `{ "<threshold name>": <number>, "xid": { "<code>": { "<field>": value } } }`; `undefined` or blank: the defaults
 * @returns the rule context
 * @throws {RuleThresholdsError} for a bad threshold (see {@link parseRuleThresholds})
 * @throws {XidPolicyError} for a bad `xid` entry, naming the code and field
 * @example
 * parseRuleContext('{"xid": {"120": {"replace_count": 3}}}').xidPolicy.entries[120]?.replace_count; // 3
 */
export function parseRuleContext(json: string | undefined): RuleContext {
  const entries = readOverrideDocument(
    json,
    'rule thresholds',
    '{"fakeLoadGpuUtilAtLeast": 0.8, "xid": {"120": {"replace_count": 3}}}',
    RuleThresholdsError,
  );
  if (entries === undefined) return DEFAULT_RULE_CONTEXT;
  const rest = entries.filter(([key]) => key !== 'xid');
  const xid = entries.find(([key]) => key === 'xid');
  return {
    thresholds:
      rest.length === 0 ? DEFAULT_THRESHOLDS : parseRuleThresholds(JSON.stringify(Object.fromEntries(rest))),
    xidPolicy: xid === undefined ? DEFAULT_XID_POLICY : xidPolicyFrom(xid[1]),
  };
}
