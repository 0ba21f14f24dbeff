/**
 * What EC2, Auto Scaling and IAM answer about one GPU instance, for the mocked clients of the
 * enrichment tests: one place for the response shapes.
 */

const ACCOUNT = '123456789012';
const CREATED = new Date('2026-01-01T00:00:00Z');

/** The instance a {@link describeInstancesAnswer} describes. */
export interface AnsweredInstance {
  readonly instanceId: string;
  /** @default 'running' */
  readonly state?: string;
  /** @default 'p5.48xlarge' */
  readonly instanceType?: string;
  /** @default 'GpuNodeProfile' */
  readonly profileName?: string;
  /** EC2 tags. @default none */
  readonly tags?: Readonly<Record<string, string>>;
}

/** EC2 `DescribeInstances` output for one instance with an instance profile. */
export function describeInstancesAnswer(instance: AnsweredInstance) {
  return {
    Reservations: [
      {
        Instances: [
          {
            InstanceId: instance.instanceId,
            InstanceType: (instance.instanceType ?? 'p5.48xlarge') as never,
            State: { Name: (instance.state ?? 'running') as never },
            IamInstanceProfile: {
              Arn: `arn:aws:iam::${ACCOUNT}:instance-profile/${instance.profileName ?? 'GpuNodeProfile'}`,
            },
            Tags: Object.entries(instance.tags ?? {}).map(([Key, Value]) => ({ Key, Value })),
          },
        ],
      },
    ],
  };
}

/** Auto Scaling `DescribeAutoScalingGroups` output for one group. */
export function autoScalingGroupAnswer(
  name: string,
  desiredCapacity: number,
  tags: Readonly<Record<string, string>> = {},
) {
  return {
    AutoScalingGroups: [
      {
        AutoScalingGroupName: name,
        DesiredCapacity: desiredCapacity,
        Tags: Object.entries(tags).map(([Key, Value]) => ({ Key, Value })),
      } as never,
    ],
  };
}

/** IAM `GetInstanceProfile` output: profile `profileName` holding role `roleName`. */
export function instanceProfileAnswer(roleName: string, profileName = 'GpuNodeProfile') {
  return {
    InstanceProfile: {
      InstanceProfileName: profileName,
      Path: '/',
      InstanceProfileId: 'AIPAEXAMPLEEXAMPLE0001',
      Arn: `arn:aws:iam::${ACCOUNT}:instance-profile/${profileName}`,
      CreateDate: CREATED,
      Roles: [
        {
          RoleName: roleName,
          Path: '/',
          RoleId: 'AROAEXAMPLEEXAMPLE0001',
          Arn: `arn:aws:iam::${ACCOUNT}:role/${roleName}`,
          CreateDate: CREATED,
        },
      ],
    },
  };
}
