import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import type { APIGatewayProxyEvent } from 'aws-lambda';
import { bench, describe } from 'vitest';
import { parseDcgmExporterText } from '../../agent/sources/dcgm-exporter';
import { parseKernelLog } from '../../agent/sources/kmsg';
import { parseBatch } from '../../lambdas/contract';
import { computeLedger, DEFAULT_RULE_CONTEXT, evaluatePointRules, priceFor } from '../../lambdas/domain';
import { createIngestHandler, type IngestHandler } from '../../lambdas/handlers/ingest-handler';
import { SILENT_LOG } from '../../lambdas/handlers/log';
import { DryRunRemediator } from '../../lambdas/local/dry-run-remediator';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { NOW, validBatch } from '../lambdas/contract/batches';

/**
 * Ingest-side costs on this machine: validation, rules + ledger, the whole handler against the
 * embedded DuckDB store, and the agent's text parsers on the real captures.
 */

const batch = validBatch();
const store = await DuckDbStore.open(':memory:');
const sink = { publish: async () => {}, record: async () => {} };
const handler: IngestHandler = createIngestHandler({
  store,
  state: store,
  alerts: sink,
  decisions: sink,
  remediator: new DryRunRemediator(),
  log: SILENT_LOG,
  remediationMode: 'replace',
  dryRun: true,
  rules: DEFAULT_RULE_CONTEXT,
  callerCheck: 'none',
});
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
