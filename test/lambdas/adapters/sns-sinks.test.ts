import { PublishCommand, SNSClient } from '@aws-sdk/client-sns';
import { mockClient } from 'aws-sdk-client-mock';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertPublishError } from '../../../lambdas/adapters/errors';
import { SnsAlertSink } from '../../../lambdas/adapters/sns-alert-sink';
import { SnsDecisionSink } from '../../../lambdas/adapters/sns-decision-sink';
import { toSnsSubject } from '../../../lambdas/adapters/sns-subject';
import type { Alert, RemediationDecision, Severity } from '../../../lambdas/domain/types';
import { expectValidAwsInputs } from './aws-model';

const topics = {
  critical: 'arn:aws:sns:us-east-1:123456789012:gpu-sentinel-critical',
  warning: 'arn:aws:sns:us-east-1:123456789012:gpu-sentinel-warning',
  info: 'arn:aws:sns:us-east-1:123456789012:gpu-sentinel-info',
};

const alert = (severity: Severity, subject = 'XID 79 on i-0abc GPU 3: GPU fell off the bus'): Alert => ({
  id: 'xid_fatal:i-0abc:3',
  finding: {
    rule: 'xid_fatal',
    severity,
    action: 'replace',
    instance_id: 'i-0abc',
    instance_type: 'p5.48xlarge',
    gpu_index: 3,
    at: '2026-03-10T12:00:05.250Z',
    summary: 'XID 79',
    remedy: 'replace the instance',
    evidence: { xid: 79 },
  },
  subject,
  body: 'What: XID 79\nWhere: i-0abc GPU 3\nDo: the instance is being replaced.',
  attributes: { severity, rule: 'xid_fatal', instance_type: 'p5.48xlarge', team: 'vision' },
});

const decision = (overrides: Partial<RemediationDecision> = {}): RemediationDecision => ({
  rule: 'xid_fatal',
  severity: 'critical',
  instance_id: 'i-0abc',
  gpu_index: 3,
  asg_name: 'p5-train',
  action: 'replace',
  reason: 'in Auto Scaling group p5-train; SetInstanceHealth(Unhealthy)',
  at: '2026-03-10T12:00:06.000Z',
  alert_id: 'xid_fatal:i-0abc:3',
  dry_run: false,
  ...overrides,
});

describe('toSnsSubject', () => {
  it.each([
    { input: 'plain subject', expected: 'plain subject' },
    { input: 'temp ≥ 90 °C — GPU 3…', expected: 'temp >= 90 deg C - GPU 3...' },
    { input: 'line\nbreak\ttab', expected: 'line break tab' },
    { input: 'équipe «vision» 🔥', expected: 'equipe vision' },
    { input: '🔥🔥', expected: 'gpu-sentinel' },
    { input: 'x'.repeat(150), expected: `${'x'.repeat(97)}...` },
  ])('makes "$input" a valid SNS subject', ({ input, expected }) => {
    // Act
    const subject = toSnsSubject(input);

    // Assess
    expect(subject).toBe(expected);
    expect(subject).toMatch(/^[\x20-\x7e]{1,100}$/);
  });
});

describe('SnsAlertSink', () => {
  const client = new SNSClient({ region: 'us-east-1' });
  const mock = mockClient(client);

  afterEach(() => {
    expectValidAwsInputs(mock, 'sns');
  });

  beforeEach(() => {
    mock.reset();
    mock.on(PublishCommand).resolves({ MessageId: 'm-1' });
  });

  it.each(['critical', 'warning', 'info'] as const)(
    'publishes a %s alert to its topic with subject, body and attributes',
    async (severity) => {
      // Prepare
      const sink = new SnsAlertSink({ client, topics });

      // Act
      await sink.publish(alert(severity));

      // Assess
      expect(mock.commandCalls(PublishCommand)[0]!.args[0].input).toEqual({
        TopicArn: topics[severity],
        Subject: 'XID 79 on i-0abc GPU 3: GPU fell off the bus',
        Message: 'What: XID 79\nWhere: i-0abc GPU 3\nDo: the instance is being replaced.',
        MessageAttributes: {
          severity: { DataType: 'String', StringValue: severity },
          rule: { DataType: 'String', StringValue: 'xid_fatal' },
          instance_type: { DataType: 'String', StringValue: 'p5.48xlarge' },
          team: { DataType: 'String', StringValue: 'vision' },
        },
      });
    },
  );

  it('sanitizes the subject and leaves out empty attributes', async () => {
    // Prepare
    const sink = new SnsAlertSink({ client, topics });
    const a = { ...alert('warning', 'GPU 3 — temp ≥ 90 °C'), attributes: { severity: 'warning', team: '' } };

    // Act
    await sink.publish(a);

    // Assess
    const input = mock.commandCalls(PublishCommand)[0]!.args[0].input;
    expect(input.Subject).toBe('GPU 3 - temp >= 90 deg C');
    expect(input.MessageAttributes).toEqual({ severity: { DataType: 'String', StringValue: 'warning' } });
  });

  it('throws AlertPublishError with the cause when SNS fails', async () => {
    // Prepare
    const cause = new Error('AuthorizationError');
    mock.on(PublishCommand).rejects(cause);
    const sink = new SnsAlertSink({ client, topics });

    // Act
    const result = sink.publish(alert('critical'));

    // Assess
    await expect(result).rejects.toBeInstanceOf(AlertPublishError);
    await expect(result).rejects.toMatchObject({ cause, topicArn: topics.critical });
  });
});

describe('SnsDecisionSink', () => {
  const client = new SNSClient({ region: 'us-east-1' });
  const mock = mockClient(client);

  afterEach(() => {
    expectValidAwsInputs(mock, 'sns');
  });

  beforeEach(() => {
    mock.reset();
    mock.on(PublishCommand).resolves({ MessageId: 'm-1' });
  });

  it.each([
    { action: 'reboot', topic: topics.critical },
    { action: 'replace', topic: topics.critical },
    { action: 'quarantine', topic: topics.critical },
    { action: 'escalate', topic: topics.critical },
    { action: 'notify', topic: topics.info },
    { action: 'skip', topic: topics.info },
  ] as const)('sends a $action decision to $topic', async ({ action, topic }) => {
    // Prepare
    const sink = new SnsDecisionSink({ client, topics });

    // Act
    await sink.record(decision({ action }));

    // Assess
    const input = mock.commandCalls(PublishCommand)[0]!.args[0].input;
    expect(input.TopicArn).toBe(topic);
    expect(input.MessageAttributes).toEqual({
      severity: { DataType: 'String', StringValue: 'critical' },
      rule: { DataType: 'String', StringValue: 'xid_fatal' },
      action: { DataType: 'String', StringValue: action },
    });
  });

  it('publishes a human subject and a body with the reason', async () => {
    // Prepare
    const sink = new SnsDecisionSink({ client, topics });

    // Act
    await sink.record(decision({ dry_run: true }));

    // Assess
    expect(mock.commandCalls(PublishCommand)[0]!.args[0].input).toEqual({
      TopicArn: topics.critical,
      Subject: 'gpu-sentinel replace i-0abc GPU 3 (xid_fatal) [dry run]',
      Message: [
        'Remediation decision: replace (dry run: nothing was executed)',
        'Instance: i-0abc, GPU 3',
        'Auto Scaling group: p5-train',
        'Rule: xid_fatal (critical)',
        'Reason: in Auto Scaling group p5-train; SetInstanceHealth(Unhealthy)',
        'Alert: xid_fatal:i-0abc:3',
        'At: 2026-03-10T12:00:06.000Z',
      ].join('\n'),
      MessageAttributes: {
        severity: { DataType: 'String', StringValue: 'critical' },
        rule: { DataType: 'String', StringValue: 'xid_fatal' },
        action: { DataType: 'String', StringValue: 'replace' },
      },
    });
  });

  it('throws AlertPublishError when SNS fails', async () => {
    // Prepare
    mock.on(PublishCommand).rejects(new Error('Throttling'));
    const sink = new SnsDecisionSink({ client, topics });

    // Act
    const result = sink.record(decision({ action: 'skip' }));

    // Assess
    await expect(result).rejects.toMatchObject({ name: 'AlertPublishError', topicArn: topics.info });
  });
});
