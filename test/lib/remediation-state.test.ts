import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, it } from 'vitest';
import { buildStack } from './build-stack';

describe('RemediationState', () => {
  let template: Template;

  beforeAll(() => {
    template = Template.fromStack(buildStack());
  });

  it('creates one on-demand table keyed by pk and sk', () => {
    // Prepare / Act / Assess
    template.resourceCountIs('AWS::DynamoDB::Table', 1);
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      BillingMode: 'PAY_PER_REQUEST',
      KeySchema: [
        { AttributeName: 'pk', KeyType: 'HASH' },
        { AttributeName: 'sk', KeyType: 'RANGE' },
      ],
      AttributeDefinitions: [
        { AttributeName: 'pk', AttributeType: 'S' },
        { AttributeName: 'sk', AttributeType: 'S' },
      ],
    });
  });

  it('expires items through the expires_at TTL attribute', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      TimeToLiveSpecification: { AttributeName: 'expires_at', Enabled: true },
    });
  });

  it('turns on point-in-time recovery and encryption at rest', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', {
      PointInTimeRecoverySpecification: { PointInTimeRecoveryEnabled: true },
      SSESpecification: { SSEEnabled: true },
    });
  });

  it('turns on deletion protection', () => {
    // Prepare / Act / Assess
    template.hasResourceProperties('AWS::DynamoDB::Table', { DeletionProtectionEnabled: true });
  });

  it('retains the table when the stack is deleted', () => {
    // Prepare / Act / Assess
    template.hasResource('AWS::DynamoDB::Table', { DeletionPolicy: 'Retain' });
  });
});
