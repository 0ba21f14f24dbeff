import { Stack, Validations } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as s3 from 'aws-cdk-lib/aws-s3';
import { Construct } from 'constructs';
import type { StoreKind } from '../lambdas/domain/lambda-environment';
import { PropsValidationError } from './props-validation-error';

/**
 * A Cost and Usage Report 2.0 export (AWS Data Exports) whose Glue table the finance reports and
 * the fleet evaluator price instance-hours from, through Athena (docs/finance.md, "Reconciling with
 * the bill").
 */
export interface CurExport {
  /** Glue database of the export's table: lower-case letters, digits and `_`. */
  readonly database: string;
  /** Glue table of the export: lower-case letters, digits and `_`. */
  readonly table: string;
  /** S3 bucket the export writes to; Athena reads its objects with the reading Lambda's role. */
  readonly bucketName: string;
}

/** Glue names: lower-case letters, digits and `_`, 1–255 characters (Athena: "Name tables, databases and columns"). */
const GLUE_NAME = /^[a-z0-9_]{1,255}$/;

/** S3 bucket names: 3–63 lower-case letters, digits, `.` and `-`, starting and ending with a letter or digit (S3 user guide, "Bucket naming rules"). */
const BUCKET_NAME = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;

/**
 * Refuses, at synth, a CUR on a store Athena does not read, or a name that is not a Glue or bucket name.
 *
 * @param cur - the export, or undefined (nothing to check)
 * @param storeKind - the deployment's telemetry store
 * @throws {PropsValidationError} naming `cur` (not the Athena store), `cur.database`, `cur.table` or `cur.bucketName`
 */
export function validateCurExport(cur: CurExport | undefined, storeKind: StoreKind): void {
  if (cur === undefined) return;
  if (storeKind !== 'athena') {
    throw new PropsValidationError('cur', 'the athena store (the CUR is read through Athena)', storeKind);
  }
  for (const key of ['database', 'table'] as const) {
    if (!GLUE_NAME.test(cur[key])) {
      throw new PropsValidationError(
        `cur.${key}`,
        'a Glue name of lower-case letters, digits and _',
        cur[key],
      );
    }
  }
  if (!BUCKET_NAME.test(cur.bucketName)) {
    throw new PropsValidationError('cur.bucketName', 'an S3 bucket name', cur.bucketName);
  }
}

/**
 * Lets `grantee` have Athena read the CUR table with its role (the Athena workgroup and its results
 * come with the store's `grantRead`): `glue:GetDatabase`, `GetTable`, `GetPartitions` on the catalog,
 * the export's database and table; `s3:ListBucket`, `GetBucketLocation` on the export's bucket and
 * `s3:GetObject` on its objects. Nothing to write, no other table or bucket. An export bucket
 * encrypted with a customer-managed KMS key also needs `kms:Decrypt` on that key, which this does
 * not grant (docs/finance.md). Tells cdk-nag why the role reads every object of the export bucket.
 *
 * @param scope - the construct that owns the imported bucket (`CurBucket`)
 * @param grantee - the reading Lambda (its `grantPrincipal` is its role, where the cdk-nag acknowledgement goes)
 * @param cur - the export
 */
export function grantCurRead(scope: Construct, grantee: iam.IGrantable, cur: CurExport): void {
  const stack = Stack.of(scope);
  const glue = (resource: string, resourceName?: string) =>
    stack.formatArn({ service: 'glue', resource, ...(resourceName !== undefined ? { resourceName } : {}) });
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['glue:GetDatabase', 'glue:GetTable', 'glue:GetPartitions'],
      resources: [
        glue('catalog'),
        glue('database', cur.database),
        glue('table', `${cur.database}/${cur.table}`),
      ],
    }),
  );
  const bucket = s3.Bucket.fromBucketName(scope, 'CurBucket', cur.bucketName);
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({
      actions: ['s3:ListBucket', 's3:GetBucketLocation'],
      resources: [bucket.bucketArn],
    }),
  );
  grantee.grantPrincipal.addToPrincipalPolicy(
    new iam.PolicyStatement({ actions: ['s3:GetObject'], resources: [bucket.arnForObjects('*')] }),
  );
  const role = grantee.grantPrincipal;
  if (!(role instanceof Construct)) return;
  Validations.of(role).acknowledge({
    id: `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:s3:::${cur.bucketName}/*]`,
    reason:
      'Athena reads the Cost and Usage Report export with this Lambda role: every object of the export bucket, read-only.',
  });
}
