import type { CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { beforeAll, describe, expect, it } from 'vitest';
import type { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { buildStack } from './build-stack';
import {
  apiGatewayAdmits,
  evaluatePolicy,
  type PolicyDocument,
  type PolicyVerdict,
  type RequestContext,
  resolveIntrinsics,
} from './iam-policy-evaluator';

const ACCOUNT = '111122223333';
const OTHER_ACCOUNT = '444455556666';
const ORG = 'o-a1b2c3d4e5';
const AGENT_ROLE = `arn:aws:iam::${ACCOUNT}:role/TestStack-AgentRole-1A2B3C`;
const RESOURCE = 'execute-api:/prod/POST/v1/batches';
/** The keys IAM adds for credentials an EC2 instance got from its instance profile. */
const INSTANCE_CREDENTIALS = {
  'ec2:SourceInstanceARN': `arn:aws:ec2:us-east-1:${ACCOUNT}:instance/i-0abc12345def67890`,
  'aws:ec2InstanceSourceVPC': 'vpc-0a1b2c3d',
  'aws:ec2InstanceSourcePrivateIPv4': '10.0.4.17',
};

/** The stack's resource policy with its intrinsics replaced by this test's account and role. */
function resourcePolicyOf(stack: GpuSentinelStack): PolicyDocument {
  const template = Template.fromStack(stack);
  const api = Object.values(template.findResources('AWS::ApiGateway::RestApi'))[0]!;
  const roleId = stack.getLogicalId(stack.agentRole.role.node.defaultChild as CfnResource);
  return resolveIntrinsics(
    api.Properties.Policy,
    { 'AWS::Partition': 'aws', 'AWS::AccountId': ACCOUNT, 'AWS::Region': 'us-east-1' },
    { [`${roleId}.Arn`]: AGENT_ROLE },
  ) as PolicyDocument;
}

function request(principalArn: string, keys: Record<string, string> = {}): RequestContext {
  const account = /::(\d{12}):/.exec(principalArn)![1]!;
  return {
    principalArn,
    principalAccount: account,
    action: 'execute-api:Invoke',
    resource: RESOURCE,
    keys: { 'aws:PrincipalArn': principalArn, 'aws:PrincipalAccount': account, ...keys },
  };
}

type Variant = readonly [name: string, request: RequestContext, identity: PolicyVerdict, admitted: boolean];

describe('ingest API resource policy: only agent roles with EC2 instance credentials', () => {
  let policy: PolicyDocument;

  beforeAll(() => {
    policy = resourcePolicyOf(buildStack());
  });

  it.each<Variant>([
    [
      'the agent role, with instance-profile credentials',
      request(AGENT_ROLE, INSTANCE_CREDENTIALS),
      'allow',
      true,
    ],
    [
      "the agent role's instance credentials used off the instance (still one instance's identity; the handler limits it to that instance)",
      request(AGENT_ROLE, { 'ec2:SourceInstanceARN': INSTANCE_CREDENTIALS['ec2:SourceInstanceARN'] }),
      'allow',
      true,
    ],
    [
      'the agent role without its managed policy (no identity Allow)',
      request(AGENT_ROLE, INSTANCE_CREDENTIALS),
      'no-match',
      false,
    ],
    [
      'the agent role assumed with sts:AssumeRole, session named after an instance',
      request(AGENT_ROLE),
      'allow',
      false,
    ],
    [
      'another role of the account with execute-api:*',
      request(`arn:aws:iam::${ACCOUNT}:role/DataPlatformAdmin`),
      'allow',
      false,
    ],
    [
      'another instance role of the account (e.g. an EKS node), with instance credentials',
      request(`arn:aws:iam::${ACCOUNT}:role/eks-node-group-role`, INSTANCE_CREDENTIALS),
      'allow',
      false,
    ],
    ['an EKS pod role (IRSA)', request(`arn:aws:iam::${ACCOUNT}:role/eks-pod-trainer`), 'allow', false],
    [
      'an IAM Identity Center (SSO) role',
      request(
        `arn:aws:iam::${ACCOUNT}:role/aws-reserved/sso.amazonaws.com/eu-west-1/AWSReservedSSO_AdministratorAccess_0123456789abcdef`,
      ),
      'allow',
      false,
    ],
    [
      'a Lambda execution role',
      request(`arn:aws:iam::${ACCOUNT}:role/service-role/some-function-role-abc123`),
      'allow',
      false,
    ],
    ['an IAM user with execute-api:Invoke', request(`arn:aws:iam::${ACCOUNT}:user/alice`), 'allow', false],
    ['the account root', request(`arn:aws:iam::${ACCOUNT}:root`), 'allow', false],
    [
      "another account's role with the same name and instance credentials",
      request(`arn:aws:iam::${OTHER_ACCOUNT}:role/TestStack-AgentRole-1A2B3C`, INSTANCE_CREDENTIALS),
      'allow',
      false,
    ],
    ["another account's user", request(`arn:aws:iam::${OTHER_ACCOUNT}:user/mallory`), 'allow', false],
  ])('%s → admitted: %s', (_name, req, identity, admitted) => {
    expect(apiGatewayAdmits(policy, ACCOUNT, identity, req)).toBe(admitted);
  });

  it('denies through explicit Deny statements, because a same-account Allow in either policy suffices', () => {
    // Act
    const forged = evaluatePolicy(policy, request(AGENT_ROLE));
    const otherRole = evaluatePolicy(
      policy,
      request(`arn:aws:iam::${ACCOUNT}:role/Other`, INSTANCE_CREDENTIALS),
    );
    // Assess
    expect([forged, otherRole]).toEqual(['deny', 'deny']);
  });
});

describe('ingest API resource policy with requireInstanceCredentials false', () => {
  let policy: PolicyDocument;

  beforeAll(() => {
    policy = resourcePolicyOf(buildStack({ requireInstanceCredentials: false }));
  });

  it.each<Variant>([
    // Where API Gateway does not see ec2:SourceInstanceARN, instance sessions look like this one.
    ['the agent role without ec2:SourceInstanceARN', request(AGENT_ROLE), 'allow', true],
    [
      'the agent role with instance-profile credentials',
      request(AGENT_ROLE, INSTANCE_CREDENTIALS),
      'allow',
      true,
    ],
    [
      'another role of the account with execute-api:*',
      request(`arn:aws:iam::${ACCOUNT}:role/DataPlatformAdmin`, INSTANCE_CREDENTIALS),
      'allow',
      false,
    ],
    ['an IAM user with execute-api:Invoke', request(`arn:aws:iam::${ACCOUNT}:user/alice`), 'allow', false],
  ])('%s → admitted: %s', (_name, req, identity, admitted) => {
    expect(apiGatewayAdmits(policy, ACCOUNT, identity, req)).toBe(admitted);
  });
});

describe('ingest API resource policy for an organization with a shared node role', () => {
  let policy: PolicyDocument;
  const memberRole = `arn:aws:iam::${OTHER_ACCOUNT}:role/GpuNodeRole`;

  beforeAll(() => {
    policy = resourcePolicyOf(
      buildStack({ organizationId: ORG, agentRoleArns: ['arn:aws:iam::*:role/GpuNodeRole'] }),
    );
  });

  it.each<Variant>([
    [
      "a member account's GpuNodeRole with instance credentials",
      request(memberRole, { ...INSTANCE_CREDENTIALS, 'aws:PrincipalOrgID': ORG }),
      'allow',
      true,
    ],
    [
      'the same role name outside the organization',
      request(memberRole, INSTANCE_CREDENTIALS),
      'allow',
      false,
    ],
    [
      "a member account's GpuNodeRole assumed from elsewhere",
      request(memberRole, { 'aws:PrincipalOrgID': ORG }),
      'allow',
      false,
    ],
    [
      "a member account's other role with instance credentials",
      request(`arn:aws:iam::${OTHER_ACCOUNT}:role/Other`, {
        ...INSTANCE_CREDENTIALS,
        'aws:PrincipalOrgID': ORG,
      }),
      'allow',
      false,
    ],
    [
      "the stack's own agent role",
      request(AGENT_ROLE, { ...INSTANCE_CREDENTIALS, 'aws:PrincipalOrgID': ORG }),
      'allow',
      true,
    ],
  ])('%s → admitted: %s', (_name, req, identity, admitted) => {
    expect(apiGatewayAdmits(policy, ACCOUNT, identity, req)).toBe(admitted);
  });
});

describe('IAM policy evaluator', () => {
  const statement = (Condition: Record<string, Record<string, string | string[]>>): PolicyDocument => ({
    Statement: [
      { Effect: 'Allow', Principal: '*', Action: 'execute-api:Invoke', Resource: RESOURCE, Condition },
    ],
  });

  it.each<[string, Record<string, Record<string, string | string[]>>, Record<string, string>, PolicyVerdict]>(
    [
      ['StringEquals with the key absent', { StringEquals: { 'aws:PrincipalOrgID': ORG } }, {}, 'no-match'],
      [
        'StringNotEquals with the key absent',
        { StringNotEquals: { 'aws:PrincipalOrgID': ORG } },
        {},
        'allow',
      ],
      ['ArnNotLike with the key absent', { ArnNotLike: { 'aws:PrincipalArn': AGENT_ROLE } }, {}, 'allow'],
      [
        'ArnLike with a wildcard account',
        { ArnLike: { 'aws:PrincipalArn': 'arn:aws:iam::*:role/R' } },
        { 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/R` },
        'allow',
      ],
      [
        'ArnLike against a longer name',
        { ArnLike: { 'aws:PrincipalArn': 'arn:aws:iam::*:role/R' } },
        { 'aws:PrincipalArn': `arn:aws:iam::${ACCOUNT}:role/RX` },
        'no-match',
      ],
      ['Null true with the key absent', { Null: { 'ec2:SourceInstanceARN': 'true' } }, {}, 'allow'],
      [
        'Null true with the key present',
        { Null: { 'ec2:SourceInstanceARN': 'true' } },
        INSTANCE_CREDENTIALS,
        'no-match',
      ],
      [
        'a key in another case',
        { StringEquals: { 'AWS:PrincipalOrgId': ORG } },
        { 'aws:PrincipalOrgID': ORG },
        'allow',
      ],
      [
        'two operators, one failing (AND)',
        { StringEquals: { 'aws:PrincipalOrgID': ORG }, Null: { 'ec2:SourceInstanceARN': 'false' } },
        { 'aws:PrincipalOrgID': ORG },
        'no-match',
      ],
      [
        'one of two values (OR)',
        { StringEquals: { 'aws:PrincipalOrgID': ['o-other', ORG] } },
        { 'aws:PrincipalOrgID': ORG },
        'allow',
      ],
    ],
  )('evaluates %s', (_name, condition, keys, verdict) => {
    expect(evaluatePolicy(statement(condition), { ...request(AGENT_ROLE), keys })).toBe(verdict);
  });

  it('refuses an operator it does not model', () => {
    expect(() =>
      evaluatePolicy(statement({ DateLessThan: { 'aws:CurrentTime': '2030-01-01' } }), request(AGENT_ROLE)),
    ).toThrow(/DateLessThan is not modelled/);
  });
});
