import type { PolicyViolation } from 'aws-cdk-lib';
import { Validations } from 'aws-cdk-lib';
import { AwsSolutionsChecks } from 'cdk-nag';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { buildStack } from './build-stack';

/** Runs AwsSolutions on `stack`, optionally ignoring every acknowledgment. */
function nagViolations(stack: GpuSentinelStack, ignoreAcknowledgments = false): PolicyViolation[] {
  const checks = new AwsSolutionsChecks(undefined, { verbose: true });
  if (ignoreAcknowledgments) {
    // cdk-nag 3 reads acknowledgments in a private method; replacing it on this instance shows the raw findings.
    (checks as unknown as { isAcknowledged: () => boolean }).isAcknowledged = () => false;
  }
  return [...checks.validateScope(stack).violations];
}

/** Every AwsSolutions rule id acknowledged in the stack, with its reason. */
function acknowledgments(stack: GpuSentinelStack): Map<string, string> {
  const found = new Map<string, string>();
  for (const construct of stack.node.findAll()) {
    for (const entry of construct.node.metadata) {
      if (entry.type !== Validations.ACKNOWLEDGED_RULES_METADATA_KEY) continue;
      for (const [id, reason] of Object.entries(entry.data as Record<string, string>)) {
        const ruleId = id.replace(/^annotation::/i, '');
        if (ruleId.startsWith('AwsSolutions-')) found.set(ruleId, reason);
      }
    }
  }
  return found;
}

describe.each(['athena', 'timestream'] as const)('cdk-nag AwsSolutions, store %s', (store) => {
  let stack: GpuSentinelStack;

  beforeAll(() => {
    stack = buildStack({ store, alertEmails: { critical: ['oncall@example.com'] } });
  });

  it('reports no unacknowledged error or warning', () => {
    // Prepare / Act
    const violations = nagViolations(stack);

    // Assess
    expect(
      violations.map((v) => `${v.ruleName} (${v.severity}) at ${v.violatingResources[0]?.constructPath}`),
    ).toEqual([]);
  });

  it('acknowledges only findings that exist, each with a specific reason', () => {
    // Prepare
    const raw = new Set(nagViolations(stack, true).map((v) => v.ruleName));

    // Act
    const acknowledged = acknowledgments(stack);

    // Assess
    expect([...acknowledged.keys()].sort()).toEqual([...raw].sort());
    for (const reason of acknowledged.values()) expect(reason.length).toBeGreaterThan(40);
  });

  it.each([
    'AwsSolutions-COG4',
    'AwsSolutions-APIG3',
    'AwsSolutions-IAM5[Resource::*]',
    'AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AmazonAPIGatewayPushToCloudWatchLogs]',
  ])('acknowledges %s', (id) => {
    // Prepare / Act / Assess
    expect(acknowledgments(stack).has(id)).toBe(true);
  });

  it('finds nothing to acknowledge about encryption, logging, PITR, TLS or the runtime', () => {
    // Prepare / Act
    const raw = nagViolations(stack, true).map((v) => v.ruleName);

    // Assess
    for (const rule of [
      'SNS2',
      'SNS3',
      'DDB3',
      'TS3',
      'KMS5',
      'APIG1',
      'APIG2',
      'APIG6',
      'L1',
      'IAM4',
      'S10',
      'KDF1',
      'ATH1',
    ]) {
      expect(raw.filter((r) => r === `AwsSolutions-${rule}`)).toEqual([]);
    }
  });
});

describe('cdk-nag AwsSolutions with the CUR and spot price history wired (athena store)', () => {
  it('reports no unacknowledged finding, and says why ingest may DescribeSpotPriceHistory on *', () => {
    // Prepare
    const stack = buildStack({
      cur: { database: 'cur', table: 'gpu_fleet', bucketName: 'acme-cur-exports' },
      spotPriceHistory: true,
    });

    // Act
    const violations = nagViolations(stack);

    // Assess
    expect(
      violations.map((v) => `${v.ruleName} (${v.severity}) at ${v.violatingResources[0]?.constructPath}`),
    ).toEqual([]);
    const ingestReasons = stack.ingest.role.node.metadata
      .filter((m) => m.type === Validations.ACKNOWLEDGED_RULES_METADATA_KEY)
      .map((m) => JSON.stringify(m.data));
    expect(ingestReasons.join(' ')).toContain('ec2:DescribeSpotPriceHistory');
  });
});
