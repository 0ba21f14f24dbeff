import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runReportCommand } from '../../bin/commands/report';
import type { WasteReport } from '../../lambdas/domain';
import { DuckDbStore } from '../../lambdas/local/duckdb-store';
import { gpuRow, ledger } from '../lambdas/rows';

const NOW = new Date('2026-03-11T00:00:00Z');

describe('gpu-sentinel report', () => {
  let dir: string;
  let db: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'gpu-sentinel-report-cmd-'));
    db = join(dir, 'store.duckdb');
    const store = await DuckDbStore.open(db);
    const idle = ledger({ efficiency: 0, diagnosis: 'idle', underused_usd: 0 });
    const idleLedger = {
      ...idle,
      idle_usd: idle.cost_usd,
      wasted_usd: idle.cost_usd,
      waste_class: 'idle' as const,
    };
    await store.write({
      gpu: [
        gpuRow({
          time: '2026-03-10T12:00:10.000Z',
          gpu_index: 0,
          team: 'vision',
          job: 'train-42',
          namespace: 'ml-train',
          pod: 'llama-7b-0',
        }),
        gpuRow({
          time: '2026-03-10T12:00:10.000Z',
          gpu_index: 1,
          team: 'vision',
          job: 'train-42',
          namespace: 'ml-train',
          pod: 'llama-7b-1',
          ledger: idleLedger,
        }),
        gpuRow({
          time: '2026-03-10T12:00:10.000Z',
          instance_id: 'i-0bbbbbbbbbbbbbbbb',
          gpu_index: 0,
          team: 'nlp',
          job: 'eval',
          ledger: ledger({ diagnosis: 'input_bound' }),
        }),
        gpuRow({ time: '2026-03-01T12:00:10.000Z', gpu_index: 0, team: 'old' }),
      ],
      efa: [],
      events: [],
    });
    await store.close();
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function run(opts: Partial<Parameters<typeof runReportCommand>[0]>): Promise<string> {
    let out = '';
    const code = await runReportCommand(
      { db, ...opts },
      (s) => {
        out += s;
      },
      NOW,
    );
    expect(code).toBe(0);
    return out;
  }

  it.each([
    ['team', ['vision', 'nlp']],
    ['job', ['train-42', 'eval']],
    ['instance', ['i-0123456789abcdef0', 'i-0bbbbbbbbbbbbbbbb']],
    ['instance_type', ['p5.48xlarge']],
    ['diagnosis', ['idle', '(none)', 'input_bound']],
    ['namespace', ['ml-train', '(none)']],
    ['pod', ['llama-7b-1', '(none)', 'llama-7b-0']],
  ] as const)('groups the last day by %s as JSON', async (by, keys) => {
    // Prepare / Act
    const report = JSON.parse(await run({ by, format: 'json', period: 'day' })) as WasteReport;
    // Assess
    expect(report.by).toBe(by);
    expect(report.groups.map((g) => g.key)).toEqual(keys);
    expect(report.period).toEqual({ kind: 'day', from: '2026-03-10T00:00:00.000Z', to: NOW.toISOString() });
  });

  it('takes an explicit --from/--to instead of a period', async () => {
    // Prepare / Act
    const report = JSON.parse(
      await run({ format: 'json', from: '2026-03-01T00:00:00Z', to: '2026-03-02T00:00:00Z' }),
    ) as WasteReport;
    // Assess
    expect(report.period.kind).toBe('custom');
    expect(report.groups.map((g) => g.key)).toEqual(['old']);
  });

  it('writes a CSV a spreadsheet opens, with one row per team', async () => {
    // Prepare / Act
    const csv = await run({ format: 'csv', period: 'month' });
    // Assess
    const records = parse(csv, { bom: true, columns: true }) as Record<string, string>[];
    expect(records.map((r) => r.team)).toEqual(['vision', 'nlp', 'old']);
  });

  it('writes the line items by instance from the store: one row per instance and day, with place, lifecycle and idle hours', async () => {
    // Prepare / Act
    const csv = await run({ format: 'csv', by: 'instance', period: 'day' });
    // Assess
    const records = parse(csv, { bom: true, columns: true }) as Record<string, string>[];
    expect(records.map((r) => [r.day, r.instance_id, r.gpus])).toEqual([
      ['2026-03-10', 'i-0123456789abcdef0', '2'],
      ['2026-03-10', 'i-0bbbbbbbbbbbbbbbb', '1'],
    ]);
    expect(records[0]).toMatchObject({
      team: 'vision',
      namespace: 'ml-train',
      region: 'us-east-1',
      az: 'us-east-1a',
      lifecycle: 'on-demand',
      price_source: expect.stringMatching(/^builtin:/),
    });
    expect(Number(records[0]?.idle_gpu_hours)).toBeGreaterThan(0);
    expect(Number(records[1]?.idle_gpu_hours)).toBe(0);
  });

  it('writes one line item per GPU and day with --by gpu', async () => {
    // Prepare / Act
    const csv = await run({ format: 'csv', by: 'gpu', period: 'day' });
    // Assess
    const records = parse(csv, { bom: true, columns: true }) as Record<string, string>[];
    expect(records.map((r) => [r.instance_id, r.gpu_index])).toEqual([
      ['i-0123456789abcdef0', '0'],
      ['i-0123456789abcdef0', '1'],
      ['i-0bbbbbbbbbbbbbbbb', '0'],
    ]);
  });

  it('writes the HTML page with its charts to --out', async () => {
    // Prepare
    const out = join(dir, 'report.html');
    // Act
    const said = await run({ format: 'html', out });
    // Assess
    expect(said).toBe(`wrote ${out}\n`);
    const html = await readFile(out, 'utf8');
    expect(html.match(/<figure class="chart"[^>]*><figcaption>[^<]*<\/figcaption><svg/g)).toHaveLength(4);
  });

  it('prints a text summary by default', async () => {
    // Prepare / Act
    const text = await run({});
    // Assess
    expect(text).toMatch(
      /^GPU waste report\nPeriod: 2026-03-10T00:00:00.000Z to 2026-03-11T00:00:00.000Z \(day\)/,
    );
    expect(text).toContain('By team:');
  });

  it.each([
    [
      'a store that does not exist',
      { db: '/nonexistent/store.duckdb' },
      /does not exist; an absent store is not an empty report/,
    ],
    [
      '--period with --from',
      { period: 'day', from: '2026-03-01T00:00:00Z' },
      /either --period or --from\/--to/,
    ],
    [
      'a --from after --to',
      { from: '2026-03-02T00:00:00Z', to: '2026-03-01T00:00:00Z' },
      /--from before --to/,
    ],
    ['a --to that is not a time', { to: 'yesterday' }, /--to to be an ISO 8601 time/],
  ] as const)('refuses %s', async (_name, opts, message) => {
    // Prepare / Act / Assess
    await expect(runReportCommand({ db, ...opts }, () => {}, NOW)).rejects.toThrow(message);
  });
});
