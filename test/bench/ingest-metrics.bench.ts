import { Console } from 'node:console';
import { Writable } from 'node:stream';
import { Metrics } from '@aws-lambda-powertools/metrics';
import { bench, describe } from 'vitest';
import { EmfMetricsSink } from '../../lambdas/adapters/emf-metrics-sink';
import { type Batch, parseBatch } from '../../lambdas/contract';
import { acceptedBatchMetrics, computeLedger, type GpuWindowRow, priceFor } from '../../lambdas/domain';
import { SILENT_LOG } from '../../lambdas/handlers/log';
import { ago, NOW, validBatch } from '../lambdas/contract/batches';

/**
 * The per-batch CPU cost of ingest's CloudWatch metrics: computing the metric groups (pure domain)
 * and writing them as EMF lines with Powertools Metrics (serialisation; the lines go to a null
 * stream instead of stdout). A p5.48xlarge batch of 60 s: 8 GPUs × 6 flush windows of 10 s with
 * every profiling metric, one XID event, 3 alerts.
 */

const windows = Array.from({ length: 48 }, (_, i) => ({
  kind: 'flush' as const,
  start: ago(60 - 10 * Math.floor(i / 8)),
  end: ago(50 - 10 * Math.floor(i / 8)),
  gpu: { index: i % 8, name: 'NVIDIA H100 80GB HBM3' },
  metrics: {
    gpu_util: 0.97,
    sm_active: 0.6 + (i % 8) / 100,
    sm_occupancy: 0.3,
    tensor_active: 0.4,
    dram_active: 0.5,
    pcie_rx_bytes_per_s: 1.2e9,
    compute_processes: 1,
  },
}));
const batch: Batch = parseBatch(JSON.parse(JSON.stringify(validBatch({ windows }))), NOW);
const price = priceFor('p5.48xlarge', 'us-east-1', {}, 8);
const rows: GpuWindowRow[] = batch.windows.map((w) => ({
  time: w.end,
  start: w.start,
  instance_id: batch.host.instance_id,
  instance_type: batch.host.instance_type,
  region: batch.host.region,
  gpu_index: w.gpu.index,
  team: 'training',
  batch_id: batch.batch_id,
  seq: batch.seq,
  metrics: w.metrics,
  ledger: computeLedger(w, price),
}));
const alert = (rule: 'xid_fatal' | 'tensor_idle', severity: 'critical' | 'warning') => ({
  id: `${rule}:i`,
  subject: rule,
  body: rule,
  attributes: {},
  finding: {
    rule,
    severity,
    action: 'notify' as const,
    instance_id: batch.host.instance_id,
    instance_type: batch.host.instance_type,
    at: NOW.toISOString(),
    summary: rule,
    remedy: '',
    evidence: {},
  },
});
const input = {
  batch,
  windows: rows,
  alerts: [alert('xid_fatal', 'critical'), alert('tensor_idle', 'warning'), alert('tensor_idle', 'warning')],
  metricTeams: new Set(['training']),
  now: NOW,
};
const groups = acceptedBatchMetrics(input);

const metrics = new Metrics({ namespace: 'GpuSentinel' });
// Powertools writes EMF through its own Console on stdout; the bench measures serialisation, not the terminal.
const nowhere = new Writable({ write: (_chunk, _encoding, done) => done() });
(metrics as unknown as { console: Console }).console = new Console({ stdout: nowhere, stderr: nowhere });
const sink = new EmfMetricsSink({ log: SILENT_LOG, metrics });

describe('ingest metrics, one 60 s p5.48xlarge batch (48 flush windows)', () => {
  bench('acceptedBatchMetrics (pure domain)', () => {
    acceptedBatchMetrics(input);
  });
  bench('EmfMetricsSink.emit (Powertools Metrics → EMF lines, 4 groups)', () => {
    sink.emit(groups, NOW);
  });
  bench('both (what ingest adds per batch)', () => {
    sink.emit(acceptedBatchMetrics(input), NOW);
  });
});
