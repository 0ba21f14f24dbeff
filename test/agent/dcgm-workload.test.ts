import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseDcgmExporterText } from '../../agent/sources/dcgm-exporter';
import { DcgmProfilingSource } from '../../agent/sources/dcgm-profiling';
import { workloadsFromDcgm } from '../../agent/sources/dcgm-workload';
import { K8sWorkloadSchema } from '../../lambdas/contract';

/** Real scrapes from two EKS p5 nodes, one GPU held by a vLLM pod on each (see test/fixtures/real/README.md). */
const NODE_A = readFileSync(
  new URL('../fixtures/real/dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom', import.meta.url),
  'utf8',
);
const NODE_B = readFileSync(
  new URL('../fixtures/real/dcgm-exporter-h100-eks_ip-100-64-147-149_2026-03-02.prom', import.meta.url),
  'utf8',
);

/** One series of GPU 0 with the given extra labels. */
const series = (labels: string): string =>
  `DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005",${labels}} 30\n`;

describe('workloadsFromDcgm', () => {
  it.each([
    [
      'ip-10-0-171-111',
      NODE_A,
      0,
      'GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005',
      'vllm-agg-0-vllmdecodeworker-s65j5',
    ],
    [
      'ip-100-64-147-149',
      NODE_B,
      2,
      'GPU-8d76cfcf-a144-5e43-876b-a4b71f2aecd1',
      'vllm-agg-0-vllmdecodeworker-dkb9q',
    ],
  ])('maps the pod of the one held GPU on the real EKS node %s', (_node, text, index, uuid, pod) => {
    // Prepare
    const { gpus } = parseDcgmExporterText(text);

    // Act
    const { held, dropped } = workloadsFromDcgm(gpus);

    // Assess
    expect(gpus).toHaveLength(8);
    expect(held).toEqual([
      {
        gpu: expect.objectContaining({ index, uuid }),
        k8s: { namespace: 'dynamo-workload', pod, container: 'main' },
      },
    ]);
    expect(K8sWorkloadSchema.safeParse(held[0]!.k8s).success).toBe(true);
    expect(dropped).toEqual([]);
  });

  it('reads the legacy label names of --kubernetes-use-old-namespace', () => {
    // Prepare
    const { gpus } = parseDcgmExporterText(
      series('pod_namespace="ml",pod_name="train-0",container_name="trainer"'),
    );

    // Act
    const { held } = workloadsFromDcgm(gpus);

    // Assess
    expect(held.map((h) => h.k8s)).toEqual([{ namespace: 'ml', pod: 'train-0', container: 'trainer' }]);
  });

  it.each([
    ['an upper-case namespace', 'namespace="ML",pod="train-0"', undefined, ['namespace']],
    ['a pod name with a space', 'namespace="ml",pod="train 0"', undefined, ['pod']],
    ['a namespace of 64 characters', `namespace="${'a'.repeat(64)}",pod="train-0"`, undefined, ['namespace']],
    ['a pod without namespace', 'pod="train-0"', undefined, ['namespace']],
    [
      'a bad container only',
      'namespace="ml",pod="train-0",container="Main_1"',
      { namespace: 'ml', pod: 'train-0' },
      ['container'],
    ],
  ])('drops %s, never sends it, and says which label', (_name, labels, k8s, droppedLabels) => {
    // Prepare
    const { gpus } = parseDcgmExporterText(series(labels));

    // Act
    const { held, dropped } = workloadsFromDcgm(gpus);

    // Assess
    expect(held.map((h) => h.k8s)).toEqual(k8s === undefined ? [] : [k8s]);
    expect(dropped.map((d) => d.label)).toEqual(droppedLabels);
  });

  it('gives nothing for a GPU with no workload label (off Kubernetes, or not allocated)', () => {
    // Prepare
    const { gpus } = parseDcgmExporterText(series('Hostname="node"'));

    // Act / Assess
    expect(workloadsFromDcgm(gpus)).toEqual({ held: [], dropped: [] });
  });
});

describe('DcgmProfilingSource.workload', () => {
  let server: Server;
  let url: string;
  let body = NODE_A;

  beforeAll(async () => {
    server = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4' });
      res.end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`;
  });

  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  const context = {
    clock: () => new Date(),
    emit: () => {},
    warn: () => {},
    timers: { setInterval: () => 0, clearInterval: () => {} },
  };

  it("finds the pod by UUID, so an NVML index that differs from DCGM's charges the right GPU", async () => {
    // Prepare
    body = NODE_A;
    const dcgm = new DcgmProfilingSource({ url });

    // Act
    await dcgm.open(context);

    // Assess
    expect(dcgm.workload({ index: 5, uuid: 'GPU-c4529c8d-69c4-b61d-e0bc-7b2460096005' })).toEqual({
      namespace: 'dynamo-workload',
      pod: 'vllm-agg-0-vllmdecodeworker-s65j5',
      container: 'main',
    });
    expect(dcgm.workload({ index: 0, uuid: 'GPU-bc5610b9-79c8-fedd-8899-07539c7f868a' })).toBeUndefined();
    expect(dcgm.workload({ index: 0 })).toEqual(expect.objectContaining({ namespace: 'dynamo-workload' }));
  });

  it('counts every bad label value and warns once per label', async () => {
    // Prepare
    body = `${series('namespace="ML",pod="train-0"')}${series('namespace="ML",pod="train-0"').replace('gpu="0"', 'gpu="1"').replace('GPU-c4529c8d', 'GPU-d4529c8d')}`;
    const warnings: unknown[] = [];
    const dcgm = new DcgmProfilingSource({ url, onWarning: (_m, d) => warnings.push(d) });

    // Act
    await dcgm.open(context);
    await dcgm.read();

    // Assess
    expect(dcgm.stats.k8s_labels_dropped).toBe(2);
    expect(warnings).toEqual([expect.objectContaining({ label: 'namespace', gpu_index: 0 })]);
    expect(dcgm.workload({ index: 0 })).toBeUndefined();
  });
});

describe('a GPU several pods share (time-slicing / MPS with --kubernetes-virtual-gpus)', () => {
  /** One copy of a GPU series per pod, as dcgm-exporter writes them with virtual GPUs: same value, a `vgpu` label each. */
  const copies = (field: string, value: number, pods: readonly string[], extra = ''): string =>
    pods
      .map(
        (pod, i) =>
          `${field}{gpu="0",UUID="GPU-1",modelName="Tesla T4",Hostname="n1"${extra},container="main",namespace="ml",pod="${pod}",vgpu="${i}"} ${value}`,
      )
      .join('\n');

  it('charges no pod for the whole GPU and lists every pod that shares it', () => {
    // Prepare
    const text = [
      copies('DCGM_FI_DEV_GPU_UTIL', 71, ['infer-a', 'infer-b', 'infer-c']),
      copies('DCGM_FI_DEV_POWER_USAGE', 52.5, ['infer-a', 'infer-b', 'infer-c']),
    ].join('\n');

    // Act
    const { gpus, malformed } = parseDcgmExporterText(text);
    const { held, dropped } = workloadsFromDcgm(gpus);

    // Assess
    expect(malformed).toEqual([]);
    expect(gpus[0]?.metrics).toEqual({ gpu_util: 0.71, power_w: 52.5 });
    expect(gpus[0]?.labels).toEqual({});
    expect(gpus[0]?.shared_by).toEqual([
      { container: 'main', namespace: 'ml', pod: 'infer-a', vgpu: '0' },
      { container: 'main', namespace: 'ml', pod: 'infer-b', vgpu: '1' },
      { container: 'main', namespace: 'ml', pod: 'infer-c', vgpu: '2' },
    ]);
    expect(held).toEqual([]);
    expect(dropped).toEqual([]);
  });

  it('still maps a GPU whose series all name the same pod', () => {
    // Prepare
    const text = [
      copies('DCGM_FI_DEV_GPU_UTIL', 71, ['train-0']),
      copies('DCGM_FI_DEV_GPU_TEMP', 60, ['train-0']),
    ].join('\n');

    // Act
    const { gpus } = parseDcgmExporterText(text);

    // Assess
    expect(gpus[0]?.shared_by).toBeUndefined();
    expect(workloadsFromDcgm(gpus).held.map((h) => h.k8s)).toEqual([
      { namespace: 'ml', pod: 'train-0', container: 'main' },
    ]);
  });

  it('charges no pod for a MIG slice two pods share', () => {
    // Prepare
    const text = copies(
      'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
      0.5,
      ['a', 'b'],
      ',GPU_I_PROFILE="1g.10gb",GPU_I_ID="7"',
    );

    // Act
    const [gpu] = parseDcgmExporterText(text).gpus;

    // Assess
    expect(gpu?.mig_instances?.[0]?.labels).toEqual({});
    expect(gpu?.mig_instances?.[0]?.shared_by?.map((l) => l.pod)).toEqual(['a', 'b']);
  });
});
