import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { GpuSentinelStack } from '../../lib/gpu-sentinel-stack';
import { glueDatabaseNameFor } from '../../lib/physical-names';
import { PropsValidationError } from '../../lib/props-validation-error';
import { STUB_INGEST_ENTRY, testApp } from './build-stack';

/** A resource of a synthesized template, as far as the scan reads it. */
interface CfnResourceJson {
  readonly Type: string;
  readonly Properties?: Record<string, unknown>;
  readonly DeletionPolicy?: string;
}

/**
 * Top-level properties ending in `Name` that are no physical name of their resource, each with why:
 * everything else ending in `Name` (and `AliasName`) is scanned.
 */
const NOT_PHYSICAL_NAMES: Readonly<Record<string, string>> = {
  'AWS::CloudWatch::Alarm.MetricName': 'the metric watched, not the alarm',
  'AWS::SNS::Topic.DisplayName': 'the SMS/e-mail sender label; the topic name is generated',
  'AWS::IAM::Policy.PolicyName': 'an inline policy, named within the roles it is attached to',
  'AWS::Glue::Table.DatabaseName': 'the database it belongs to: scanned as part of the table name',
  'AWS::Timestream::Table.DatabaseName': 'the database it belongs to: scanned as part of the table name',
  'AWS::Logs::LogStream.LogGroupName': 'the group it belongs to: scanned as part of the stream name',
  'AWS::ApiGateway::Stage.StageName': 'named within its REST API: scanned with the API id',
};

/**
 * A CloudFormation value as a string: literals as they are, the pseudo parameters resolved for one
 * account and region, and a `Ref`/`Fn::GetAtt` of a resource of the stack as `<stack>/<logical id>`
 * (CloudFormation generates that resource's name, unique to the stack).
 */
function resolve(value: unknown, stackName: string): string {
  if (typeof value === 'string' || typeof value === 'number') return String(value);
  if (Array.isArray(value)) return value.map((v) => resolve(v, stackName)).join(',');
  if (value !== null && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    if (typeof o.Ref === 'string') {
      const pseudo: Record<string, string> = {
        'AWS::StackName': stackName,
        'AWS::Region': 'eu-west-1',
        'AWS::AccountId': '123456789012',
        'AWS::Partition': 'aws',
        'AWS::URLSuffix': 'amazonaws.com',
      };
      return pseudo[o.Ref] ?? `<${stackName}/${o.Ref}>`;
    }
    if (Array.isArray(o['Fn::GetAtt'])) return `<${stackName}/${(o['Fn::GetAtt'] as string[]).join('.')}>`;
    if (Array.isArray(o['Fn::Join'])) {
      const [sep, parts] = o['Fn::Join'] as [string, unknown[]];
      return parts.map((p) => resolve(p, stackName)).join(sep);
    }
  }
  return JSON.stringify(value);
}

/** Every physical name a resource is given in the template, as `<type> <name>`, names scoped to their parent. */
function physicalNames(resource: CfnResourceJson, stackName: string): string[] {
  const props = resource.Properties ?? {};
  const names: string[] = [];
  const add = (name: unknown) => names.push(`${resource.Type} ${resolve(name, stackName)}`);
  for (const [key, value] of Object.entries(props)) {
    if (!/(Name|^AliasName)$/.test(key) || `${resource.Type}.${key}` in NOT_PHYSICAL_NAMES) continue;
    if (resource.Type === 'AWS::Timestream::Table' && key === 'TableName') {
      add({ 'Fn::Join': ['.', [props.DatabaseName, value]] });
    } else if (resource.Type === 'AWS::Logs::LogStream') {
      add({ 'Fn::Join': [':', [props.LogGroupName, value]] });
    } else add(value);
  }
  if (resource.Type === 'AWS::Glue::Database') add((props.DatabaseInput as { Name?: unknown }).Name);
  if (resource.Type === 'AWS::Glue::Table') {
    add({ 'Fn::Join': ['.', [props.DatabaseName, (props.TableInput as { Name?: unknown }).Name]] });
  }
  if (resource.Type === 'AWS::ApiGateway::Stage')
    add({ 'Fn::Join': ['/', [props.RestApiId, props.StageName]] });
  return names;
}

/** The synthesized template of a stack named `stackName`. */
function synth(stackName: string, store: 'athena' | 'timestream'): Record<string, unknown> {
  const stack = new GpuSentinelStack(testApp(), stackName, { store, ingestEntry: STUB_INGEST_ENTRY });
  return Template.fromStack(stack).toJSON();
}

/** Every physical name of a template: resources and exported outputs. */
function namesOf(template: Record<string, unknown>, stackName: string): string[] {
  const resources = Object.values(template.Resources as Record<string, CfnResourceJson>);
  const exports = Object.values((template.Outputs ?? {}) as Record<string, { Export?: { Name: unknown } }>)
    .filter((o) => o.Export !== undefined)
    .map((o) => `export ${resolve(o.Export?.Name, stackName)}`);
  return [...resources.flatMap((r) => physicalNames(r, stackName)), ...exports];
}

describe.each(['athena', 'timestream'] as const)('physical names, store %s', (store) => {
  const first = synth('GpuSentinel', store);
  const second = synth('GpuSentinelEu', store);

  it('finds the named resources (the scan sees names)', () => {
    // Prepare / Act
    const names = namesOf(first, 'GpuSentinel');

    // Assess
    expect(names).toContain('AWS::ApiGateway::RestApi GpuSentinel-ingest');
    if (store === 'athena') {
      expect(names).toContain('AWS::Glue::Database gpu_sentinel');
      expect(names).toContain('AWS::Glue::Table gpu_sentinel.gpu_windows');
    }
  });

  it('gives two stacks of one account and region no physical name in common', () => {
    // Prepare
    const a = new Set(namesOf(first, 'GpuSentinel'));

    // Act
    const shared = namesOf(second, 'GpuSentinelEu').filter((n) => a.has(n));

    // Assess
    expect(shared).toEqual([]);
  });

  it('retains nothing whose name the next deploy of the same stack would take again', () => {
    // Prepare
    const resources = Object.entries(first.Resources as Record<string, CfnResourceJson>);

    // Act
    const fixed = resources
      .filter(([, r]) => r.DeletionPolicy === 'Retain')
      .flatMap(([id, r]) => physicalNames(r, 'GpuSentinel').map((n) => `${id}: ${n}`))
      .filter((n) => !n.includes('<GpuSentinel/'));

    // Assess
    expect(fixed).toEqual([]);
  });
});

describe('glueDatabaseNameFor', () => {
  it.each([
    ['GpuSentinel', 'gpu_sentinel'],
    ['GpuSentinelEu', 'gpu_sentinel_eu'],
    ['gpu-sentinel-2', 'gpu_sentinel_2'],
    ['Fleet2', 'fleet2'],
    ['MyGPUFleet', 'my_gpu_fleet'],
    ['A'.repeat(128), 'a'.repeat(128)],
  ])('names the Glue database of stack %s %s', (stackName, expected) => {
    // Prepare / Act / Assess
    expect(glueDatabaseNameFor(stackName)).toBe(expected);
  });

  it('throws for a stack name with no letter or digit', () => {
    // Prepare / Act / Assess
    expect(() => glueDatabaseNameFor('--')).toThrow(PropsValidationError);
  });
});
