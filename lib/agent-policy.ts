import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import { Construct } from 'constructs';
import type { IngestApi } from './ingest-api';

/** Props of {@link AgentPolicy}. */
export interface AgentPolicyProps {
  /** The API the agents send to. */
  readonly api: IngestApi;
  /**
   * Name of the managed policy (IAM: 1–128 characters `[\w+=,.@-]`).
   * @default `GpuSentinelAgentPolicy-<stack name>-<region>` (IAM names are account-global; the
   *   region keeps a second regional deployment of the same stack from colliding)
   */
  readonly managedPolicyName?: string;
}

/**
 * The customer-managed policy to attach to GPU instance roles (docs/design.md §11): it allows
 * `execute-api:Invoke` on exactly `POST /v1/batches` of this stack's API, nothing else. The agent
 * signs with the instance role; the API checks that the caller's session name is the instance id.
 *
 * @example
 * new AgentPolicy(this, 'AgentPolicy', { api }).policy.attachToRole(gpuRole);
 */
export class AgentPolicy extends Construct {
  /** The managed policy. */
  readonly policy: iam.ManagedPolicy;

  constructor(scope: Construct, id: string, props: AgentPolicyProps) {
    super(scope, id);
    this.policy = new iam.ManagedPolicy(this, 'Policy', {
      managedPolicyName:
        props.managedPolicyName ??
        `GpuSentinelAgentPolicy-${Stack.of(this).stackName}-${Stack.of(this).region}`,
      description: 'gpu-sentinel agent: send telemetry batches (execute-api:Invoke on POST /v1/batches only)',
      statements: [
        new iam.PolicyStatement({
          sid: 'SendBatches',
          actions: ['execute-api:Invoke'],
          resources: [props.api.batchesArn],
        }),
      ],
    });
  }

  /** ARN of the managed policy. */
  get managedPolicyArn(): string {
    return this.policy.managedPolicyArn;
  }
}
