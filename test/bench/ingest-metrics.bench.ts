import { bench, describe } from 'vitest';
import { acceptedBatchMetrics } from '../../lambdas/domain';
import { groups, input, NOW, sink } from './fixtures/ingest-metrics-fixture';

/**
 * The per-batch CPU cost of ingest's CloudWatch metrics: computing the metric groups (pure domain)
 * and writing them as EMF lines with Powertools Metrics (the fixture's batch: 60 s of a
 * p5.48xlarge). CPU time per batch without the noise of a shared machine: `ingest-metrics-cpu.ts`.
 */

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
