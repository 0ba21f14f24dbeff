import type * as iam from 'aws-cdk-lib/aws-iam';
import type { StoreEnvironment, StoreKind } from '../lambdas/domain/lambda-environment';

/**
 * What the Lambdas need from the deployed telemetry store, whichever it is ({@link StoreKind}): its
 * settings as environment variables and the permissions to write (ingest) and to read (reports, fleet).
 */
export interface TelemetryStoreResources {
  /** Which store: `athena` or `timestream`. */
  readonly kind: StoreKind;
  /**
   * What a function needs to reach this store: `STORE=<kind>` and the store's names, as
   * `STORE_VARIABLES` in lambdas/domain/lambda-environment.ts lists them.
   * @returns environment variables
   */
  environment(): StoreEnvironment;
  /**
   * Lets `grantee` write telemetry rows, nothing more.
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantWrite(grantee: iam.IGrantable): iam.Grant;
  /**
   * Lets `grantee` read the GPU windows (reports, the fleet evaluator's `lastSeen`, `nodeJobMeans`,
   * `queryWasteBy`), nothing more. Object-prefix wildcards the read needs are acknowledged to cdk-nag
   * on the grantee's role by the grant; `Resource: "*"` is left to the grantee's construct, which
   * knows its other actions on `*`.
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantRead(grantee: iam.IGrantable): iam.Grant;
}
