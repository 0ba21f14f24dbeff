/**
 * CPU time per batch of ingest's CloudWatch metrics (`npx tsx test/bench/ingest-metrics-cpu.ts`):
 * `process.cpuUsage()` (user + system) over many batches after a warm-up, so the figure holds on
 * a machine shared with other work, where wall-clock benchmarks are inflated.
 */
import { acceptedBatchMetrics } from '../../lambdas/domain';
import { input, NOW, sink } from './fixtures/ingest-metrics-fixture';

const BATCHES = 20_000;
const WARMUP = 2_000;

function cpuMicrosPerBatch(run: () => void): number {
  for (let i = 0; i < WARMUP; i += 1) run();
  const start = process.cpuUsage();
  for (let i = 0; i < BATCHES; i += 1) run();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / BATCHES;
}

const domain = cpuMicrosPerBatch(() => {
  acceptedBatchMetrics(input);
});
const both = cpuMicrosPerBatch(() => {
  sink.emit(acceptedBatchMetrics(input), NOW);
});
process.stdout.write(
  `${JSON.stringify({ batches: BATCHES, domain_cpu_us: Number(domain.toFixed(1)), domain_and_emf_cpu_us: Number(both.toFixed(1)) })}\n`,
);
