import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import {
  DEFAULT_RULE_CONTEXT,
  parseRuleContext,
  type RuleContext,
  RuleThresholdsError,
  XidPolicyError,
} from '../../lambdas/domain';

/**
 * The rule context of a local run: the defaults, with the thresholds of `--rules FILE` (a JSON
 * object of threshold name → number, checked against the thresholds table) merged over them, and
 * its optional `xid` key (`{"120": {"replace_count": 3}}`) merged over the Xid policy.
 *
 * @param path - the `--rules` file; absent means the defaults
 * @returns the rule context for the local pipeline
 * @throws {RuleThresholdsError} naming the file and the bad key when the file cannot be read, is
 *   not JSON, names an unknown threshold or gives a value outside its range, or a bad `xid` entry
 */
export async function loadRuleContext(path: string | undefined): Promise<RuleContext> {
  if (path === undefined) return DEFAULT_RULE_CONTEXT;
  const file = resolve(path);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (cause) {
    throw new RuleThresholdsError(
      '(root)',
      file,
      `Expected a readable rules file at ${file}, got ${String(cause)}.`,
      {
        cause,
      },
    );
  }
  try {
    return parseRuleContext(text);
  } catch (err) {
    if (err instanceof XidPolicyError)
      throw new RuleThresholdsError(
        `xid.${err.xid}.${err.field}`,
        err.value,
        `rules file ${file}: ${err.message}`,
        {
          cause: err,
        },
      );
    if (!(err instanceof RuleThresholdsError)) throw err;
    throw new RuleThresholdsError(err.key, err.value, `rules file ${file}: ${err.message}`, { cause: err });
  }
}
