import type * as iam from 'aws-cdk-lib/aws-iam';
import type { StoreKind } from './constants';

/**
 * What the ingest Lambda needs from the deployed telemetry store, whichever it is
 * ({@link StoreKind}): its settings as environment variables and the permission to write.
 */
export interface TelemetryStoreResources {
  /** Which store: `athena` or `timestream`. */
  readonly kind: StoreKind;
  /** The ingest Lambda's environment for this store (`STORE=<kind>` plus names). */
  environment(): Record<string, string>;
  /**
   * Lets `grantee` write telemetry rows, nothing more.
   * @param grantee - the principal to grant to
   * @returns the grant
   */
  grantWrite(grantee: iam.IGrantable): iam.Grant;
}
