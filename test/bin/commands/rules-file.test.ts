import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRuleContext } from '../../../bin/commands/rules-file';
import { DEFAULT_RULE_CONTEXT, DEFAULT_THRESHOLDS, RuleThresholdsError } from '../../../lambdas/domain';

const dir = mkdtempSync(join(tmpdir(), 'rules-file-'));
const file = (name: string, text: string): string => {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
};

describe('loadRuleContext', () => {
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('gives the default context without a file', async () => {
    expect(await loadRuleContext(undefined)).toBe(DEFAULT_RULE_CONTEXT);
  });

  it('merges the file over the default thresholds and keeps the XID policy', async () => {
    // Act
    const ctx = await loadRuleContext(file('ok.json', '{"underutilizedSmActiveBelow": 0.25}'));

    // Assess
    expect(ctx.thresholds).toEqual({ ...DEFAULT_THRESHOLDS, underutilizedSmActiveBelow: 0.25 });
    expect(ctx.xidPolicy).toBe(DEFAULT_RULE_CONTEXT.xidPolicy);
  });

  it('merges the xid key over the Xid policy: a GSP error replaces only on the third episode', async () => {
    // Act
    const ctx = await loadRuleContext(file('xid.json', '{"xid": {"120": {"replace_count": 3}}}'));

    // Assess
    expect(ctx.thresholds).toBe(DEFAULT_THRESHOLDS);
    expect(ctx.xidPolicy.entries[120]).toMatchObject({
      action: 'reset',
      replace_count: 3,
      replace_window_s: 86_400,
    });
    expect(ctx.xidPolicy.entries[119]?.replace_count).toBe(2);
  });

  it.each([
    ['{"xid": {"120": {"replace_cnt": 3}}}', 'xid.120.replace_cnt'],
    ['{"xid": {"120": {"replace_count": 1}}}', 'xid.120.replace_count'],
    ['{"xid": [1]}', 'xid.0.xid'],
  ])('refuses %s naming %s', async (text, key) => {
    // Act
    const error = await loadRuleContext(file('xid-bad.json', text)).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(RuleThresholdsError);
    expect((error as RuleThresholdsError).key).toBe(key);
  });

  it.each([
    [
      'a missing file',
      () => join(dir, 'absent.json'),
      '(root)',
      /Expected a readable rules file at .*absent\.json/,
    ],
    [
      'text that is not JSON',
      () => file('bad.json', '{ nope'),
      '(root)',
      /rules file .*bad\.json: .*not JSON/,
    ],
    [
      'an unknown threshold',
      () => file('typo.json', '{"idleBilledSS": 60}'),
      'idleBilledSS',
      /`idleBilledSS`/,
    ],
    ['a value out of range', () => file('range.json', '{"idleBilledS": 1}'), 'idleBilledS', /`idleBilledS`/],
  ])('throws RuleThresholdsError naming the file and the key for %s', async (_case, path, key, message) => {
    // Act
    const error = await loadRuleContext(path()).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(RuleThresholdsError);
    expect((error as RuleThresholdsError).key).toBe(key);
    expect((error as Error).message).toMatch(message);
  });
});
