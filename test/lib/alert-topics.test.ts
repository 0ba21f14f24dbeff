import { Match, Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack } from './build-stack';

describe('AlertTopics', () => {
  let stack: GpuSentinelStack;
  let template: Template;
  let keyLogicalId: string;

  beforeAll(() => {
    stack = buildStack({
      alertEmails: { critical: ['oncall@example.com', 'lead@example.com'], reports: ['finance@example.com'] },
    });
    template = Template.fromStack(stack);
    keyLogicalId = stack.getLogicalId(stack.topics.key.node.defaultChild as never);
  });

  it('creates four topics, each encrypted with the alerts key', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::SNS::Topic', 4);
    const topics = template.findResources('AWS::SNS::Topic');
    for (const topic of Object.values(topics)) {
      expect(topic.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [keyLogicalId, 'Arn'] });
    }
  });

  it.each(['critical', 'warning', 'info', 'reports'])('names the %s topic for humans', (severity) => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::SNS::Topic', { DisplayName: `gpu-sentinel ${severity}` });
  });

  it('rotates the alerts key and lets CloudWatch alarms of this account use it', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::KMS::Key', {
      Description: Match.stringLikeRegexp('encrypts its buckets, streams, topics, store and log groups'),
      EnableKeyRotation: true,
      KeyPolicy: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Sid: 'AllowCloudWatchAlarmsToPublish',
            Principal: { Service: 'cloudwatch.amazonaws.com' },
            Action: ['kms:Decrypt', 'kms:GenerateDataKey*'],
            Condition: { StringEquals: { 'aws:SourceAccount': { Ref: 'AWS::AccountId' } } },
          }),
        ]),
      },
    });
  });

  it('denies publishing without TLS on every topic', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::SNS::TopicPolicy', 4);
    template.allResourcesProperties('AWS::SNS::TopicPolicy', {
      PolicyDocument: {
        Statement: Match.arrayWith([
          Match.objectLike({
            Effect: 'Deny',
            Action: 'sns:Publish',
            Condition: { Bool: { 'aws:SecureTransport': 'false' } },
          }),
        ]),
      },
    });
  });

  it.each([
    ['CriticalTopic', 'oncall@example.com'],
    ['CriticalTopic', 'lead@example.com'],
    ['ReportsTopic', 'finance@example.com'],
  ])('subscribes %s to %s by e-mail', (topicId, email) => {
    // Prepare
    const topicLogicalId = stack.getLogicalId(
      stack.topics.node.findChild(topicId).node.defaultChild as never,
    );

    // Act / Assess
    template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: email,
      TopicArn: { Ref: topicLogicalId },
    });
  });

  it('creates no other subscription', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::SNS::Subscription', 3);
  });

  it.each([
    ['alertEmails.critical[0]', { critical: ['not-an-address'] }],
    ['alertEmails.warning[1]', { warning: ['ok@example.com', 'two words@example.com'] }],
    ['alertEmails.critical', { critical: 'oncall@example.com' as unknown as string[] }],
    ['alertEmails', { pager: ['oncall@example.com'] } as never],
  ])('fails if %s is not valid', (prop, alertEmails) => {
    // Prepare / Act
    const build = () => buildStack({ alertEmails });

    // Assess
    expect(build).toThrow(PropsValidationError);
    expect(build).toThrow(`Expected \`${prop}\` to be`);
  });
});
