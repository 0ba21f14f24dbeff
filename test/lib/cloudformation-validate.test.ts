import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type App, CfnResource, Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { buildStack, testApp } from './build-stack';

/** One finding of a validation plugin, as the CDK writes it to `validation-report.json`. */
interface Finding {
  readonly plugin: string;
  readonly rule: string;
  readonly severity: string;
  readonly description: string;
}

/**
 * Synthesizes the stack's app with the CDK's built-in CloudFormation validation (what `cdk synth`
 * and `cdk deploy` run, with `cdk.json`'s `validateAgainstDefaultRules`) and returns the findings
 * it reported that no construct acknowledged: none when the report is absent.
 */
function cloudFormationFindings(stack: Stack): Finding[] {
  return validationReport(stack)
    .pluginReports.filter((r) => r.pluginName === 'CloudFormation Validate')
    .flatMap((r) =>
      r.violations.map((v) => ({
        plugin: r.pluginName,
        rule: v.ruleName,
        severity: v.severity,
        description: v.description,
      })),
    );
}

/** The validation plugins' report of the stack's app (synthesizes it): open and acknowledged findings. */
function validationReport(stack: Stack): {
  pluginReports: {
    pluginName: string;
    violations: { ruleName: string; severity: string; description: string }[];
    suppressedViolations?: { ruleName: string }[];
  }[];
} {
  const assembly = (stack.node.root as App).synth();
  const reportPath = join(assembly.directory, 'validation-report.json');
  return existsSync(reportPath) ? JSON.parse(readFileSync(reportPath, 'utf8')) : { pluginReports: [] };
}

describe('CloudFormation validation (resource schemas and default rules)', () => {
  it.each([
    ['athena', []],
    // Timestream's maintenance-mode notice is true and acknowledged with the reason the store stays.
    ['timestream', ['W3697']],
  ] as const)(
    'synthesizes store %s with no warning at all, acknowledged ones but %j included',
    (store, expected) => {
      // Prepare
      const stack = buildStack({ store }, { cloudFormationValidation: true });

      // Act
      const report = validationReport(stack);
      const acknowledged = new Set(
        report.pluginReports.flatMap((r) => (r.suppressedViolations ?? []).map((v) => v.ruleName)),
      );

      // Assess
      expect(report.pluginReports.flatMap((r) => r.violations)).toEqual([]);
      expect([...acknowledged]).toEqual(expected);
      expect(Annotations.fromStack(stack).findWarning('*', Match.anyValue())).toEqual([]);
      expect(Annotations.fromStack(stack).findError('*', Match.anyValue())).toEqual([]);
    },
  );

  it.each(['athena', 'timestream'] as const)('passes with store %s and no finding left open', (store) => {
    // Prepare
    const stack = buildStack(
      { store, alertEmails: { critical: ['oncall@example.com'] } },
      { cloudFormationValidation: true },
    );

    // Act
    const findings = cloudFormationFindings(stack);

    // Assess
    expect(findings).toEqual([]);
  });

  // The two checks of the validation itself use an empty stack of the same app settings: what they
  // prove is that the plugin runs on a synth here, which a whole stack's synth would only slow down.
  it('reports a warning left open (the validation really runs here)', () => {
    // Prepare
    const stack = new Stack(testApp({ cloudFormationValidation: true }), 'Probe');
    new CfnResource(stack, 'OddTopic', { type: 'AWS::SNS::Topic', properties: { TopicName: 42 } });

    // Act
    const findings = cloudFormationFindings(stack);

    // Assess
    expect(findings).toEqual([
      expect.objectContaining({
        rule: 'W9003',
        severity: 'warning',
        description: expect.stringContaining('TopicName'),
      }),
    ]);
  });

  it('fails the synth on a resource the schema refuses', () => {
    // Prepare
    const stack = new Stack(testApp({ cloudFormationValidation: true }), 'Probe');
    new CfnResource(stack, 'NotATopic', { type: 'AWS::SNS::Topic', properties: { NoSuchProperty: true } });

    // Act / Assess
    expect(() => cloudFormationFindings(stack)).toThrow(/NoSuchProperty/);
  });
});
