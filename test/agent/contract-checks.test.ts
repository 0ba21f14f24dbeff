import fc from 'fast-check';
import * as v from 'valibot';
import { describe, expect, it } from 'vitest';
import { AgentConfigSchema } from '../../agent/config';
import { AgentHostSchema, checkHost } from '../../agent/identity/host-schema';
import { DCGM_DIRECT_FIELDS } from '../../agent/sources/dcgm-exporter';
import { AgentK8sWorkloadSchema } from '../../agent/sources/k8s-workload-schema';
import { isInRange, METRIC_RANGES } from '../../lambdas/contract/field-rules';
import { GpuMetricsSchema, HostSchema, K8sWorkloadSchema } from '../../lambdas/contract/schema';

/** Strings near the contract's patterns: valid ones, their edges and their near misses. */
const nearStrings = fc.oneof(
  fc.constantFrom(
    'i-0abc12345def67890',
    'i-0abc1234',
    'i-0ABC12345DEF67890',
    'i-0abc12345def6789',
    'p5.48xlarge',
    'P5.48xlarge',
    'p5',
    'us-east-1',
    'us-gov-west-1',
    'us-isob-east-1',
    'us-east-1a',
    'us-east-1',
    'ami-0abc1234',
    'ami-0abc12345def678901',
    'ml',
    'train-0',
    'train.0',
    '-bad',
    'Bad',
    'a'.repeat(63),
    'a'.repeat(64),
    'a'.repeat(253),
    'a'.repeat(254),
    '',
  ),
  fc.stringMatching(/^[a-z0-9.-]{0,70}$/),
  fc.string({ maxLength: 20 }),
);

/** Hosts with fields drawn from valid and invalid values, some fields absent, some extra. */
const hosts = fc.record(
  {
    instance_id: fc.oneof(nearStrings, fc.stringMatching(/^i-[0-9a-f]{8}([0-9a-f]{9})?$/)),
    instance_type: nearStrings,
    region: fc.oneof(nearStrings, fc.constantFrom('eu-west-3', 'cn-north-1x')),
    az: nearStrings,
    lifecycle: fc.constantFrom('spot', 'on-demand', 'reserved'),
    asg_name: fc.oneof(fc.constant(''), fc.string({ maxLength: 300 })),
    ami_id: nearStrings,
    tags: fc.dictionary(fc.string({ maxLength: 130 }), fc.string({ maxLength: 260 }), { maxKeys: 55 }),
    extra: fc.integer(),
  },
  { requiredKeys: [] },
);

/** Workloads with fields drawn from valid and invalid names. */
const workloads = fc.record(
  { namespace: nearStrings, pod: nearStrings, container: nearStrings, extra: fc.string() },
  { requiredKeys: [] },
);

describe("agent checks and the contract's zod schemas", () => {
  it('accept and refuse the same hosts', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(hosts, (host) => {
        expect(checkHost(host).success).toBe(HostSchema.safeParse(host).success);
      }),
      { numRuns: 2000 },
    );
  });

  it.each([
    [{ instance_id: 'i-0abc12345def67890', instance_type: 'p5.48xlarge', region: 'us-east-1' }, true],
    [
      {
        instance_id: 'i-0abc12345def67890',
        instance_type: 'p5.48xlarge',
        region: 'us-east-1',
        az: 'us-east-1',
      },
      false,
    ],
    [{ instance_id: 'i-0abc', instance_type: 'p5.48xlarge', region: 'us-east-1' }, false],
    [{ instance_id: 'i-0abc12345def67890', instance_type: 'p5.48xlarge' }, false],
    [
      {
        instance_id: 'i-0abc12345def67890',
        instance_type: 'p5.48xlarge',
        region: 'us-east-1',
        tags: Object.fromEntries(Array.from({ length: 51 }, (_, i) => [`k${i}`, 'v'])),
      },
      false,
    ],
  ])('judges host %o valid: %s on both sides', (host, expected) => {
    // Prepare / Act
    const agent = v.safeParse(AgentHostSchema, host).success;
    const contract = HostSchema.safeParse(host).success;

    // Assess
    expect([agent, contract]).toEqual([expected, expected]);
  });

  it("names the bad field and gives the contract's message", () => {
    // Prepare
    const host = { instance_id: 'i-nope', instance_type: 'p5.48xlarge', region: 'us-east-1' };

    // Act
    const checked = checkHost(host);

    // Assess
    expect(checked).toMatchObject({
      success: false,
      field: 'instance_id',
      message: 'expected an EC2 instance id like i-0abc12345def67890',
    });
  });

  it('accept and refuse the same Kubernetes workloads, whole and field by field', () => {
    // Prepare / Act / Assess
    fc.assert(
      fc.property(workloads, (k8s) => {
        expect(v.safeParse(AgentK8sWorkloadSchema, k8s).success).toBe(
          K8sWorkloadSchema.safeParse(k8s).success,
        );
        for (const field of ['namespace', 'pod', 'container'] as const)
          expect(v.safeParse(AgentK8sWorkloadSchema.entries[field], k8s[field]).success).toBe(
            K8sWorkloadSchema.shape[field].safeParse(k8s[field]).success,
          );
      }),
      { numRuns: 2000 },
    );
  });

  it('accept and refuse the same identity overrides in the agent config', () => {
    // Prepare
    const pairs = [
      ['instanceId', 'instance_id'],
      ['instanceType', 'instance_type'],
      ['region', 'region'],
      ['az', 'az'],
    ] as const;

    // Act / Assess
    fc.assert(
      fc.property(nearStrings, (value) => {
        for (const [option, field] of pairs)
          expect(v.safeParse(AgentConfigSchema.entries[option], value).success).toBe(
            HostSchema.shape[field].safeParse(value).success,
          );
      }),
      { numRuns: 1000 },
    );
  });

  it.each(Object.entries(DCGM_DIRECT_FIELDS))(
    "checks dcgm-exporter's %s by the range of its contract metric",
    (_field, { metric, range }) => {
      // Prepare
      const schema = GpuMetricsSchema;
      const values = fc.oneof(
        fc.double(),
        fc.integer(),
        fc.boolean(),
        fc.constantFrom(-41, -40, 0, 0.5, 1, 150, 5000, 10_000, 10_001, 2 ** 53),
      );

      // Act / Assess
      fc.assert(
        fc.property(values, (value) => {
          const agent =
            range === 'boolean' ? typeof value === 'boolean' : isInRange(METRIC_RANGES[range], value);
          expect(agent).toBe(schema.safeParse({ [metric]: value }).success);
        }),
      );
    },
  );
});
