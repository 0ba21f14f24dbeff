import { AutoScalingClient } from '@aws-sdk/client-auto-scaling';
import { EC2Client } from '@aws-sdk/client-ec2';
import { IAMClient } from '@aws-sdk/client-iam';
import { AutoScalingRemediator } from '../adapters/auto-scaling-remediator';
import { Ec2InstanceDirectory } from '../adapters/ec2-instance-directory';
import { RegionalClients } from '../adapters/regional-clients';
import type { InstanceDirectory, Remediator } from '../domain/ports';
import { leanClient, type SdkClientConfig } from './sdk-client-config';

/** The ingest Lambda's EC2, Auto Scaling and IAM side: enrichment and remediation. */
export interface InstanceApis {
  /** Server-side enrichment and the sender check (EC2, Auto Scaling, IAM; cached per instance). */
  readonly instances: InstanceDirectory;
  /** Replacement, quarantine and reboot (Auto Scaling `SetInstanceHealth`, EC2 `CreateTags`, `RebootInstances`). */
  readonly remediator: Remediator;
}

/**
 * Builds the EC2, Auto Scaling (one client per region, shared by enrichment and remediation) and
 * IAM clients and the adapters on them. Its own module so the ingest Lambda loads these SDK
 * clients (EC2's is the largest it bundles) with `import()` on first use, never at module init,
 * and the bundler keeps only the commands the adapters import.
 *
 * @param sdk - settings given to every client
 * @returns the instance directory and the remediator
 */
export function makeInstanceApis(sdk: SdkClientConfig): InstanceApis {
  const ec2 = new RegionalClients((region) =>
    leanClient((config) => new EC2Client({ ...config, region }), sdk),
  );
  const autoScaling = new RegionalClients((region) =>
    leanClient((config) => new AutoScalingClient({ ...config, region }), sdk),
  );
  return {
    instances: new Ec2InstanceDirectory({
      ec2,
      autoScaling,
      iam: leanClient((config) => new IAMClient(config), sdk),
    }),
    remediator: new AutoScalingRemediator({ autoScaling, ec2 }),
  };
}
