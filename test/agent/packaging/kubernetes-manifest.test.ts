import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import * as z from 'zod';
import { AGENT_CONFIG_OPTIONS } from '../../../agent/config';
import { AGENT_GLIBC_TUNABLES, AGENT_SEA_FILE } from '../../../agent/packaging/build-agent-sea';

const PACKAGING = join(import.meta.dirname, '..', '..', '..', 'agent', 'packaging');
const MANIFEST = join(PACKAGING, 'kubernetes', 'gpu-sentinel-agent.yaml');
const SCHEMA = join(
  import.meta.dirname,
  '..',
  '..',
  'fixtures',
  'kubernetes',
  'daemonset-apps-v1.schema.json',
);

/** apps/v1 DaemonSet, strict (test/fixtures/kubernetes/README.md). */
const daemonSetSchema = z.fromJSONSchema(JSON.parse(readFileSync(SCHEMA, 'utf8')));

interface Container {
  env: { name: string; value: string }[];
  securityContext: { privileged?: boolean };
  resources: { limits: Record<string, string>; requests: Record<string, string> };
  volumeMounts: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface NodeSelectorRequirement {
  key: string;
  operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist' | 'Gt' | 'Lt';
  values?: string[];
}
interface NodeSelectorTerm {
  matchExpressions?: NodeSelectorRequirement[];
}
interface DaemonSet {
  kind: string;
  spec: {
    template: {
      spec: {
        affinity: {
          nodeAffinity: {
            requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: NodeSelectorTerm[] };
          };
        };
        hostPID?: boolean;
        hostNetwork?: boolean;
        runtimeClassName?: string;
        terminationGracePeriodSeconds?: number;
        tolerations: { operator: string }[];
        containers: Container[];
        volumes: { name: string; hostPath: { path: string; type: string } }[];
      };
    };
  };
}

const documents = parseAllDocuments(readFileSync(MANIFEST, 'utf8')).map((d) => d.toJS() as { kind: string });
const daemonSet = documents.find((d) => d.kind === 'DaemonSet') as DaemonSet;
const pod = daemonSet.spec.template.spec;
const [agent] = pod.containers as [Container];
const env = Object.fromEntries(agent.env.map((e) => [e.name, e.value]));
const unit = readFileSync(join(PACKAGING, 'gpu-sentinel-agent.service'), 'utf8');

/**
 * Whether a node with `labels` matches required node affinity `terms`, as the scheduler and the
 * DaemonSet controller decide it (Kubernetes "Assign Pods to Nodes", node affinity; component-helpers
 * `nodeaffinity`): the terms are ORed, a term's expressions ANDed, a term without expressions
 * matches nothing; `NotIn` and `DoesNotExist` hold for an absent label, `Gt`/`Lt` compare integers.
 */
function nodeMatches(terms: readonly NodeSelectorTerm[], labels: Readonly<Record<string, string>>): boolean {
  const holds = ({ key, operator, values = [] }: NodeSelectorRequirement): boolean => {
    const value = labels[key];
    switch (operator) {
      case 'In':
        return value !== undefined && values.includes(value);
      case 'NotIn':
        return value === undefined || !values.includes(value);
      case 'Exists':
        return value !== undefined;
      case 'DoesNotExist':
        return value === undefined;
      case 'Gt':
      case 'Lt': {
        if (value === undefined || !/^-?\d+$/.test(value)) return false;
        const [n, limit] = [Number(value), Number(values[0])];
        return operator === 'Gt' ? n > limit : n < limit;
      }
    }
  };
  return terms.some((t) => (t.matchExpressions ?? []).length > 0 && (t.matchExpressions ?? []).every(holds));
}

/** The host path a container path lies under, through the volume mounted above it. */
function hostPathOf(path: string): string | undefined {
  const mount = agent.volumeMounts
    .filter((m) => path === m.mountPath || path.startsWith(`${m.mountPath}/`))
    .sort((a, b) => b.mountPath.length - a.mountPath.length)[0];
  const volume = pod.volumes.find((v) => v.name === mount?.name);
  return mount && volume ? volume.hostPath.path + path.slice(mount.mountPath.length) : undefined;
}

describe('Kubernetes DaemonSet (agent/packaging/kubernetes/gpu-sentinel-agent.yaml)', () => {
  it('holds a Namespace and a DaemonSet in it', () => {
    // Prepare / Act
    const kinds = documents.map((d) => d.kind);

    // Assess
    expect(kinds).toEqual(['Namespace', 'DaemonSet']);
  });

  it('is a valid apps/v1 DaemonSet under the Kubernetes API schema, no unknown field', () => {
    // Prepare / Act
    const result = daemonSetSchema.safeParse(daemonSet);

    // Assess
    expect(result.error?.issues ?? []).toEqual([]);
  });

  it.each([
    {
      what: 'a misspelt field',
      change: (d: DaemonSet) => Object.assign(d.spec.template.spec, { hostPid: true }),
    },
    {
      what: 'a wrong type',
      change: (d: DaemonSet) => Object.assign(d.spec.template.spec, { hostPID: 'yes' }),
    },
    { what: 'no selector', change: (d: DaemonSet) => Object.assign(d.spec, { selector: undefined }) },
  ])('the schema refuses it with $what', ({ change }) => {
    // Prepare
    const broken = structuredClone(daemonSet);
    change(broken);

    // Act
    const result = daemonSetSchema.safeParse(JSON.parse(JSON.stringify(broken)));

    // Assess
    expect(result.success).toBe(false);
  });

  it('sets only environment variables the agent reads (GPU_SENTINEL_*) or the NVIDIA runtime reads', () => {
    // Prepare
    const agentEnv = new Set(AGENT_CONFIG_OPTIONS.map((o) => o.env));

    // Act
    const unknown = Object.keys(env).filter((name) => !agentEnv.has(name) && !name.startsWith('NVIDIA_'));

    // Assess
    expect(unknown).toEqual([]);
    expect(env.NVIDIA_VISIBLE_DEVICES).toBe('all');
    expect(env.NVIDIA_DRIVER_CAPABILITIES).toContain('utility');
  });

  it('runs on the host PID namespace and network, through the NVIDIA runtime, on every GPU node taint', () => {
    // Prepare / Act / Assess
    expect(pod.hostPID).toBe(true);
    expect(pod.hostNetwork).toBe(true);
    expect(pod.runtimeClassName).toBe('nvidia');
    expect(pod.tolerations).toContainEqual({ operator: 'Exists' });
    expect(agent.securityContext.privileged).toBe(true);
  });

  const terms = pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms;
  const karpenterP5 = {
    'karpenter.k8s.aws/instance-gpu-count': '8',
    'node.kubernetes.io/instance-type': 'p5.48xlarge',
  };
  const operatorG6 = { 'nvidia.com/gpu.present': 'true', 'node.kubernetes.io/instance-type': 'g6.12xlarge' };
  const CLIENT = 'nvidia.com/gpu.deploy.client';

  it.each([
    ['a Karpenter p5 node, no GPU Operator', karpenterP5, true],
    ['a Karpenter p5 node, GPU Operator client label "true"', { ...karpenterP5, [CLIENT]: 'true' }, true],
    ['a GPU feature discovery g6 node, client label "true"', { ...operatorG6, [CLIENT]: 'true' }, true],
    [
      'a managed node group p4d node (instance type only)',
      { 'node.kubernetes.io/instance-type': 'p4d.24xlarge' },
      true,
    ],
    [
      'a node whose MIG layout nvidia-mig-manager is changing',
      { ...operatorG6, [CLIENT]: 'paused-for-mig-change' },
      false,
    ],
    [
      'a node whose driver the GPU Operator is upgrading',
      { ...karpenterP5, [CLIENT]: 'paused-for-driver-upgrade' },
      false,
    ],
    ['a node where GPU clients are switched off ("false")', { ...operatorG6, [CLIENT]: 'false' }, false],
    [
      'a CPU node',
      { 'node.kubernetes.io/instance-type': 'm7i.2xlarge', 'karpenter.k8s.aws/instance-gpu-count': '0' },
      false,
    ],
  ] as const)('on %s, runs: %s', (_what, labels, runs) => {
    // Act / Assess
    expect(nodeMatches(terms, labels)).toBe(runs);
  });

  it.each([
    [{ ...karpenterP5, [CLIENT]: 'true' }, true],
    [karpenterP5, false],
    [{ ...karpenterP5, [CLIENT]: 'paused-for-mig-change' }, false],
  ] as const)(
    'with docs/agent.md’s nodeSelector patch (waited for by mig-manager), on %j runs: %s',
    (labels, runs) => {
      // Prepare: the merge patch as docs/agent.md prints it; its selector is ANDed with the affinity
      const docs = readFileSync(join(PACKAGING, '..', '..', 'docs', 'agent.md'), 'utf8');
      const json = /patch daemonset gpu-sentinel-agent --type merge \\\n\s+-p '([^']+)'/.exec(docs)?.[1];
      const patch = JSON.parse(json ?? '{}') as {
        spec?: { template?: { spec?: { nodeSelector?: Record<string, string> } } };
      };
      const selector = patch.spec?.template?.spec?.nodeSelector ?? {};
      expect(Object.keys(selector)).toEqual([CLIENT]);
      const selected = Object.entries(selector).every(
        ([k, v]) => (labels as Record<string, string>)[k] === v,
      );
      // Act / Assess
      expect(selected && nodeMatches(terms, labels)).toBe(runs);
    },
  );

  it('asks the GPU Operator client label of every GPU term, so no term schedules it during a MIG change', () => {
    // Prepare / Act
    const clientRules = terms.map((t) => (t.matchExpressions ?? []).filter((e) => e.key === CLIENT));

    // Assess
    for (const rules of clientRules) expect(rules).toHaveLength(1);
    expect(terms.length % 2).toBe(0);
  });

  it('reads the host kernel log, EFA sysfs and keeps its spool on the node', () => {
    // Prepare / Act / Assess
    expect(hostPathOf(env.GPU_SENTINEL_KMSG_PATH ?? '')).toBe('/dev/kmsg');
    expect(pod.volumes.find((v) => v.hostPath.path === '/dev/kmsg')?.hostPath.type).toBe('CharDevice');
    expect(hostPathOf(env.GPU_SENTINEL_EFA_ROOT ?? '')).toBe('/sys/class/infiniband');
    expect(hostPathOf(env.GPU_SENTINEL_SPOOL_DIR ?? '')).toBe('/var/lib/gpu-sentinel/spool');
    expect(agent.volumeMounts.find((m) => m.mountPath === '/var/lib/gpu-sentinel')?.readOnly).toBeUndefined();
  });

  it('takes the systemd unit’s memory limit and stop timeout', () => {
    // Prepare
    const memoryMax = /^MemoryMax=(\d+)M$/m.exec(unit)?.[1];
    const stopS = /^TimeoutStopSec=(\d+)s$/m.exec(unit)?.[1];

    // Act / Assess
    expect(agent.resources.limits.memory).toBe(`${memoryMax}Mi`);
    expect(pod.terminationGracePeriodSeconds).toBe(Number(stopS));
  });

  it('runs the image the Dockerfile builds: the single executable with koffi beside it', () => {
    // Prepare
    const dockerfile = readFileSync(join(PACKAGING, 'kubernetes', 'Dockerfile'), 'utf8');

    // Act
    const entrypoint = /^ENTRYPOINT \["([^"]+)"\]$/m.exec(dockerfile)?.[1];

    // Assess
    expect(entrypoint).toBe(`/opt/gpu-sentinel/lib/${AGENT_SEA_FILE}`);
    expect(dockerfile).toMatch(/^COPY node_modules \/opt\/gpu-sentinel\/lib\/node_modules$/m);
    expect(dockerfile).not.toMatch(/\bnode:|nodejs/);
    expect(dockerfile).toMatch(new RegExp(`^ENV GLIBC_TUNABLES=${AGENT_GLIBC_TUNABLES}$`, 'm'));
  });
});
