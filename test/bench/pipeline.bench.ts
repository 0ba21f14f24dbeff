import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { bench, describe } from 'vitest';
import { parseDcgmExporterText } from '../../agent/sources/dcgm-exporter';
import { parseKernelLog } from '../../agent/sources/kmsg';
import { parseBatch } from '../../lambdas/contract';
import {
  computeLedger,
  DEFAULT_RULE_CONTEXT,
  evaluatePointRules,
  evaluateWindowRules,
  judgedHorizons,
  nextIdleSince,
  priceFor,
  type RuleContext,
} from '../../lambdas/domain';
import { createIngestHandler, type IngestHandler } from '../../lambdas/handlers/ingest-handler';
import { SILENT_LOG } from '../../lambdas/handlers/log';
import { DryRunRemediator } from '../../lambdas/local/dry-run-remediator';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { NOW, validBatch } from '../lambdas/contract/batches';
import { COMPUTE_BOUND } from '../lambdas/domain/rules/horizons';

/**
 * Ingest-side costs on this machine: validation, rules + ledger, the whole handler against the
 * embedded DuckDB store, and the agent's text parsers on the real captures.
 */

const batch = validBatch();
const sink = { publish: async () => {}, record: async () => {} };
/** An ingest handler on its own in-memory DuckDB store, dry-run remediation, silent sinks. */
const handlerWith = async (rules: RuleContext): Promise<IngestHandler> => {
  const own = await DuckDbStore.open(':memory:');
  return createIngestHandler({
    store: own,
    state: own,
    alerts: sink,
    decisions: sink,
    remediator: new DryRunRemediator(),
    log: SILENT_LOG,
    remediationMode: 'replace',
    dryRun: true,
    rules,
    callerCheck: 'none',
  });
};
const handler = await handlerWith(DEFAULT_RULE_CONTEXT);
const json = JSON.parse(JSON.stringify(batch)) as unknown;
const scrape = readFileSync(
  new URL('../fixtures/real/dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom', import.meta.url),
  'utf8',
);
const kernelLog = readFileSync(
  new URL('../fixtures/real/dmesg-xid13-43.decode.iso.log', import.meta.url),
  'utf8',
);

describe('ingest, one p5.48xlarge batch (8 GPU windows, 1 event)', () => {
  bench('parseBatch (contract v1 validation)', () => {
    parseBatch(json, NOW);
  });

  bench('point rules + waste ledger (pure domain)', () => {
    evaluatePointRules(batch, DEFAULT_RULE_CONTEXT, NOW);
    const price = priceFor('p5.48xlarge', 'us-east-1');
    for (const w of batch.windows) computeLedger(w, price);
  });

  let seq = 0;
  const body = (): APIGatewayProxyEvent =>
    ({
      body: gzipSync(
        JSON.stringify({
          ...batch,
          seq: ++seq,
          sent_at: new Date().toISOString(),
          windows: batch.windows.map((w) => ({
            ...w,
            start: new Date(Date.now() - 10_000 - seq * 10).toISOString(),
            end: new Date(Date.now() - seq * 10).toISOString(),
          })),
          events: [],
        }),
      ).toString('base64'),
      isBase64Encoded: true,
      headers: { 'content-encoding': 'gzip' },
      requestContext: { identity: { userArn: null } },
    }) as unknown as APIGatewayProxyEvent;

  bench(
    'whole ingest handler: gunzip, validate, rules, ledger, DuckDB write',
    async () => {
      await handler(body());
    },
    { iterations: 50, time: 2000 },
  );
});

describe('agent parsers on real captures', () => {
  bench('dcgm-exporter scrape, 8× H100 (30 lines)', () => {
    parseDcgmExporterText(scrape);
  });

  bench('kernel log, 635 lines, 636 XIDs (dmesg --decode --time-format iso)', () => {
    parseKernelLog(kernelLog);
  });
});

/**
 * The window rules' cost at ingest: the same batch with 8 flush windows and 8 horizon windows (a
 * healthy compute-bound host, the common case), judged (rules on) and not judged (rules off: a
 * minimum span longer than the horizon, so the horizons are validated and dropped as before the window rules existed).
 */
const rulesOffContext: RuleContext = {
  ...DEFAULT_RULE_CONTEXT,
  thresholds: { ...DEFAULT_RULE_CONTEXT.thresholds, minHorizonSpanS: 3600 },
};
const withHorizons = (at: number, n: number) => {
  const end = new Date(at).toISOString();
  return {
    ...batch,
    seq: n,
    sent_at: end,
    agent: { ...batch.agent, profiling_source: 'gpm' as const },
    windows: batch.windows.flatMap((w) => [
      { ...w, start: new Date(at - 10_000).toISOString(), end, metrics: COMPUTE_BOUND },
      {
        ...w,
        kind: 'horizon' as const,
        start: new Date(at - 900_000).toISOString(),
        end,
        metrics: COMPUTE_BOUND,
      },
    ]),
    events: [],
  };
};
const rulesOn = await handlerWith(DEFAULT_RULE_CONTEXT);
const rulesOff = await handlerWith(rulesOffContext);

describe('ingest with horizons, one p5.48xlarge batch (8 flush + 8 horizon windows)', () => {
  const parsed = parseBatch(JSON.parse(JSON.stringify(withHorizons(NOW.getTime(), 1))), NOW);
  const price = priceFor('p5.48xlarge', 'us-east-1');

  bench('window rules + diagnosis (pure domain), 8 horizons', () => {
    const { gpus, shortGpus } = judgedHorizons(parsed, DEFAULT_RULE_CONTEXT.thresholds, price);
    const idle = nextIdleSince(new Map(), gpus, DEFAULT_RULE_CONTEXT.thresholds);
    evaluateWindowRules(
      { batch: parsed, gpus, shortGpus, price, idleSince: idle.since },
      DEFAULT_RULE_CONTEXT,
      NOW,
    );
  });

  let n = 0;
  const event = (): APIGatewayProxyEvent => {
    n++;
    return {
      body: gzipSync(JSON.stringify(withHorizons(Date.now() - n * 10, n))).toString('base64'),
      isBase64Encoded: true,
      headers: { 'content-encoding': 'gzip' },
      requestContext: { identity: { userArn: null } },
    } as unknown as APIGatewayProxyEvent;
  };

  bench(
    'whole ingest handler, window rules off (horizons validated and dropped)',
    async () => {
      await rulesOff(event());
    },
    { iterations: 50, time: 2000 },
  );

  bench(
    'whole ingest handler, window rules on (diagnosis, rules, idle marks, firing list)',
    async () => {
      await rulesOn(event());
    },
    { iterations: 50, time: 2000 },
  );
});
