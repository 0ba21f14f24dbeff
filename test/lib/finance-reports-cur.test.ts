import type { CfnResource } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { FinanceReports, type FinanceReportsCur } from '../../lib/finance-reports';
import { FleetEvaluator } from '../../lib/fleet-evaluator';
import {
  DEFAULT_FLEET_ENTRY,
  DEFAULT_REPORT_ENTRY,
  DEPS_LOCK_FILE_PATH,
  type GpuSentinelStack,
} from '../../lib/gpu-sentinel-stack';
import { PropsValidationError } from '../../lib/props-validation-error';
import { buildStack } from './build-stack';
import { actionsOf, roleStatements } from './iam-statements';

const CUR: FinanceReportsCur = { database: 'cur', table: 'gpu_fleet', bucketName: 'acme-cur-exports' };

function addReports(stack: GpuSentinelStack, cur: FinanceReportsCur): FinanceReports {
  return new FinanceReports(stack, 'CurReports', {
    entry: DEFAULT_REPORT_ENTRY,
    depsLockFilePath: DEPS_LOCK_FILE_PATH,
    store: stack.store,
    topics: stack.topics,
    cur,
  });
}

describe('FinanceReports with a CUR 2.0 export', () => {
  it('tells the report Lambda the CUR table and lets it read the table and the export bucket only', () => {
    // Prepare
    const stack = buildStack();
    // Act
    const reports = addReports(stack, CUR);
    const template = Template.fromStack(stack);
    // Assess
    const id = (c: { node: { defaultChild?: unknown } }) =>
      stack.getLogicalId(c.node.defaultChild as CfnResource);
    const env =
      template.findResources('AWS::Lambda::Function')[id(reports.function)]?.Properties.Environment.Variables;
    expect(env).toMatchObject({ STORE: 'athena', CUR_DATABASE: 'cur', CUR_TABLE: 'gpu_fleet' });
    const statements = JSON.stringify(roleStatements(template, id(reports.role)));
    expect(statements).toContain(':table/cur/gpu_fleet');
    expect(statements).toContain(':database/cur');
    expect(statements).toContain(':s3:::acme-cur-exports/*');
    const actions = roleStatements(template, id(reports.role)).flatMap((s) => actionsOf(s));
    expect(actions).toEqual(expect.arrayContaining(['glue:GetPartitions', 's3:GetObject', 's3:ListBucket']));
    expect(
      actions.filter((a) => a.startsWith('s3:') && /Put|Delete/.test(a) && statements.includes('acme')),
    ).not.toContain('s3:DeleteObject');
  });

  it('is wired by the stack’s `cur` prop (context curDatabase/curTable/curBucket) into its own reports', () => {
    // Prepare
    const stack = buildStack({ cur: CUR });
    // Act
    const template = Template.fromStack(stack);
    // Assess
    const id = (c: { node: { defaultChild?: unknown } }) =>
      stack.getLogicalId(c.node.defaultChild as CfnResource);
    const env =
      template.findResources('AWS::Lambda::Function')[id(stack.reports.function)]?.Properties.Environment
        .Variables;
    expect(env).toMatchObject({ CUR_DATABASE: 'cur', CUR_TABLE: 'gpu_fleet' });
    const statements = JSON.stringify(roleStatements(template, id(stack.reports.role)));
    expect(statements).toContain(':table/cur/gpu_fleet');
    expect(statements).toContain(':s3:::acme-cur-exports/*');
    const fleetEnv =
      template.findResources('AWS::Lambda::Function')[id(stack.fleet.function)]?.Properties.Environment
        .Variables;
    expect(fleetEnv).toMatchObject({ STORE: 'athena', CUR_DATABASE: 'cur', CUR_TABLE: 'gpu_fleet' });
  });

  it('lets the fleet evaluator read the CUR table and the export bucket only, read-only', () => {
    // Prepare
    const stack = buildStack({ cur: CUR });
    // Act
    const template = Template.fromStack(stack);
    // Assess
    const statements = roleStatements(
      template,
      stack.getLogicalId(stack.fleet.role.node.defaultChild as CfnResource),
    );
    const text = JSON.stringify(statements);
    const glue = statements.find((s) => JSON.stringify(s).includes(':table/cur/gpu_fleet'));
    expect(glue === undefined ? [] : actionsOf(glue).sort()).toEqual([
      'glue:GetDatabase',
      'glue:GetPartitions',
      'glue:GetTable',
    ]);
    expect(JSON.stringify(glue)).toContain(':table/cur/gpu_fleet');
    expect(JSON.stringify(glue)).toContain(':database/cur');
    const curS3 = statements.filter((s) => JSON.stringify(s).includes('acme-cur-exports'));
    expect(curS3.flatMap((s) => actionsOf(s)).sort()).toEqual([
      's3:GetBucketLocation',
      's3:GetObject',
      's3:ListBucket',
    ]);
    expect(text).toContain(':s3:::acme-cur-exports/*');
  });

  it('leaves the stack’s reports on the stored prices when no CUR is given', () => {
    // Prepare
    const stack = buildStack({});
    // Act
    const template = Template.fromStack(stack);
    // Assess
    const id = stack.getLogicalId(stack.reports.function.node.defaultChild as CfnResource);
    expect(
      template.findResources('AWS::Lambda::Function')[id]?.Properties.Environment.Variables,
    ).not.toHaveProperty('CUR_DATABASE');
    const fleetId = stack.getLogicalId(stack.fleet.function.node.defaultChild as CfnResource);
    expect(
      template.findResources('AWS::Lambda::Function')[fleetId]?.Properties.Environment.Variables,
    ).not.toHaveProperty('CUR_DATABASE');
    const fleetRole = stack.getLogicalId(stack.fleet.role.node.defaultChild as CfnResource);
    expect(JSON.stringify(roleStatements(template, fleetRole))).not.toMatch(/:table\/cur\/|:database\/cur"/);
  });

  it.each([
    ['a CUR on the Timestream store', { store: 'timestream' as const }, CUR, 'cur'],
    ['a database that is not a Glue name', {}, { ...CUR, database: 'Cur-DB' }, 'cur.database'],
    ['a table that is not a Glue name', {}, { ...CUR, table: 'x"; drop' }, 'cur.table'],
    ['a bucket that is not a bucket name', {}, { ...CUR, bucketName: 'A' }, 'cur.bucketName'],
  ])('fails at synth for %s, naming the prop', (_name, props, cur, prop) => {
    // Prepare
    const stack = buildStack(props);
    // Act
    const error = (() => {
      try {
        addReports(stack, cur);
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    // Assess
    expect(error).toBeInstanceOf(PropsValidationError);
    expect((error as PropsValidationError).prop).toBe(prop);
  });

  it('fails at synth for a fleet evaluator with a CUR on the Timestream store, naming the prop', () => {
    // Prepare
    const stack = buildStack({ store: 'timestream' });
    // Act / Assess
    expect(
      () =>
        new FleetEvaluator(stack, 'CurFleet', {
          entry: DEFAULT_FLEET_ENTRY,
          depsLockFilePath: DEPS_LOCK_FILE_PATH,
          store: stack.store,
          topics: stack.topics,
          state: stack.state,
          cur: CUR,
        }),
    ).toThrow(PropsValidationError);
  });
});
