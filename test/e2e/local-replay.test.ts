import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SIMULATED_INSTANCE_ID_PREFIX } from '../../agent/playback/simulate-fleet';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const MANIFEST = join(ROOT, 'test/fixtures/replay/real-captures.json');

interface ManifestHost {
  instance_id: string;
  instance_type: string;
  dcgm_exporter?: string[];
  kernel_logs?: string[];
  agent_batches?: string[];
}

function csvRows(text: string): Record<string, string>[] {
  const [header, ...lines] = text.trim().split('\n');
  const cols = header!.split(',');
  return lines.map((line) => Object.fromEntries(line.split(',').map((v, i) => [cols[i]!, v])));
}

function jsonl(text: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

describe('gpu-sentinel local, replaying the bundled real captures end to end', () => {
  let out: string;
  let stdout: string;
  let hosts: ManifestHost[];
  let waste: Record<string, string>[];
  let alerts: Record<string, unknown>[];
  let decisions: Record<string, unknown>[];

  const hostWith = (file: string): ManifestHost => {
    const host = hosts.find((h) =>
      [...(h.dcgm_exporter ?? []), ...(h.kernel_logs ?? []), ...(h.agent_batches ?? [])].some((f) =>
        f.includes(file),
      ),
    );
    if (!host) throw new Error(`no host in the manifest replays ${file}`);
    return host;
  };

  beforeAll(async () => {
    // Prepare
    out = await mkdtemp(join(tmpdir(), 'gpu-sentinel-e2e-'));
    hosts = (JSON.parse(await readFile(MANIFEST, 'utf8')) as { hosts: ManifestHost[] }).hosts;
    // Act: the README's main job, as a user runs it (real CLI, real loopback HTTP, real DuckDB)
    const run = await promisify(execFile)(
      process.execPath,
      [join(ROOT, 'bin/gpu-sentinel.mjs'), 'local', '--out', out, '--no-nvml'],
      {
        cwd: ROOT,
        env: { ...process.env, GPU_SENTINEL_LOG_LEVEL: 'error' },
        maxBuffer: 16 * 1024 * 1024,
      },
    );
    stdout = run.stdout;
    waste = csvRows(await readFile(join(out, 'waste.csv'), 'utf8'));
    alerts = jsonl(await readFile(join(out, 'alerts.jsonl'), 'utf8'));
    decisions = jsonl(await readFile(join(out, 'remediation.jsonl'), 'utf8'));
  }, 180_000);

  afterAll(async () => {
    await rm(out, { recursive: true, force: true });
  });

  it.each([
    'dcgm-exporter-h100-eks_ip-10-0-171-111_2026-03-10.prom',
    'dcgm-exporter-h100-eks_ip-100-64-147-149_2026-03-02.prom',
  ])('reports every GPU of the idle p5 in %s as wasted, priced at p5.48xlarge', (scrape) => {
    // Assess
    const host = hostWith(scrape);
    const rows = waste.filter((r) => r.instance_id === host.instance_id);
    expect(rows).toHaveLength(8);
    for (const r of rows) {
      const hours = Number(r.gpu_hours);
      const cost = Number(r.cost_usd);
      expect(r.instance_type).toBe('p5.48xlarge');
      expect(Number(r.price_usd_per_hour)).toBe(55.04);
      expect(r.price_source).toMatch(/^builtin:/);
      expect(hours).toBeGreaterThan(0.9);
      expect(cost).toBeCloseTo((55.04 / 8) * hours, 4);
      expect(Number(r.wasted_usd)).toBeCloseTo(cost, 5);
      expect(r.efficiency_source).toBe('gpu_util');
    }
  });

  it('prices the real H200 our agent read through NVML by its GPM SM activity: part wasted, part throttled by the power cap', () => {
    // Assess
    const host = hostWith('captured/h200-driver-580.159.04');
    const rows = waste.filter((r) => r.instance_id === host.instance_id);
    expect(rows).toHaveLength(1);
    const [r] = rows;
    const cost = Number(r?.cost_usd);
    expect(r?.instance_type).toBe('p5en.48xlarge');
    expect(r?.efficiency_source).toBe('sm_active');
    expect(Number(r?.gpu_hours)).toBeGreaterThan(0.9);
    expect(cost).toBeGreaterThan(0);
    // Idle, held and tiny-kernel windows are waste; the tensor and copy phases are not.
    expect(Number(r?.wasted_usd)).toBeGreaterThan(0.3 * cost);
    expect(Number(r?.wasted_usd)).toBeLessThan(0.9 * cost);
    expect(Number(r?.held_idle_usd)).toBeGreaterThan(0);
    expect(Number(r?.throttled_usd)).toBeGreaterThan(0);
    expect(stdout).toMatch(
      new RegExp(`${host.instance_id} p5en\\.48xlarge: 1 GPUs.*efficiency from sm_active`),
    );
  });

  it('raises an xid_fatal reset alert for the GPU that logged Xid 48 → 63 → 94 (the catalog resets a DBE first)', () => {
    const host = hostWith('dmesg-xid48-63-94');
    const fatal = alerts.filter(
      (a) =>
        a.instance_id === host.instance_id &&
        a.rule === 'xid_fatal' &&
        a.severity === 'warning' &&
        (a.evidence as { xid?: number }).xid === 48,
    );
    expect(fatal.length).toBeGreaterThanOrEqual(1);
    expect(JSON.stringify(fatal[0]!.evidence)).toMatch(/48/);
  });

  it('decides to reboot the Xid 48 host (dry-run), never to replace it on one DBE', () => {
    const host = hostWith('dmesg-xid48-63-94');
    const mine = decisions.filter((d) => d.instance_id === host.instance_id);
    const reboot = mine.filter((d) => d.action === 'reboot');
    expect(reboot).toHaveLength(1);
    expect(reboot[0]).toMatchObject({ rule: 'xid_fatal', dry_run: true });
    expect(typeof reboot[0]!.reason).toBe('string');
    expect(mine.filter((d) => d.action === 'replace')).toEqual([]);
  });

  it('never replaces the host whose GPU logged only application faults (629 Xid 13, 7 Xid 43)', () => {
    const host = hostWith('dmesg-xid13-43');
    const acted = decisions.filter(
      (d) =>
        d.instance_id === host.instance_id &&
        ['replace', 'quarantine', 'escalate'].includes(String(d.action)),
    );
    expect(acted).toEqual([]);
    const critical = alerts.filter((a) => a.instance_id === host.instance_id && a.severity === 'critical');
    expect(critical).toEqual([]);
    const notice = alerts.find(
      (a) => a.instance_id === host.instance_id && (a.evidence as { xid?: number }).xid === 13,
    );
    expect(notice).toMatchObject({ rule: 'xid_app', severity: 'info', action: 'notify' });
  });

  it('stores every kernel-log XID exactly once (629 Xid 13, 7 Xid 43, 1 Xid 48, 1 Xid 63, 9 Xid 94)', async () => {
    // Prepare: read the run's DuckDB file back
    const instance = await DuckDBInstance.create(join(out, 'gpu-sentinel.duckdb'), {
      access_mode: 'READ_ONLY',
    });
    const conn = await instance.connect();
    // Act
    const result = await conn.runAndReadAll(
      'SELECT instance_id, xid, count(*)::INTEGER AS n FROM events GROUP BY ALL ORDER BY instance_id, xid',
    );
    conn.closeSync();
    instance.closeSync();
    // Assess
    const counts = Object.fromEntries(result.getRowObjects().map((r) => [`${r.instance_id}:${r.xid}`, r.n]));
    const a = hostWith('dmesg-xid48-63-94').instance_id;
    const b = hostWith('dmesg-xid13-43').instance_id;
    expect(counts).toEqual({
      [`${a}:48`]: 1,
      [`${a}:63`]: 1,
      [`${a}:94`]: 9,
      [`${b}:13`]: 629,
      [`${b}:43`]: 7,
    });
  });

  it.each([
    ['fake-load', 'fake_load', 'fake_load'],
    ['input-bound', 'input_bound', 'input_bound'],
    ['tensor-idle', 'tensor_idle', 'tensor_idle'],
    ['memory-bound', 'memory_bound', 'memory_bound'],
    ['a100-no-profiling', 'unknown', 'profiling_unavailable'],
  ])(
    'shows the simulated %s host, labelled simulated, with its diagnosis %s and the fix of its %s alert',
    (name, diagnosis, rule) => {
      // Assess
      const section = stdout.slice(
        stdout.indexOf('Simulated fleet (not real machines; tag simulated=true):'),
      );
      const host = section.slice(section.indexOf(`  sim-${name} (`)).split(/\n {2}sim-|\n\n/)[0] ?? '';
      expect(host).toMatch(/\(simulated\)/);
      expect(host).toContain(`diagnosis: ${diagnosis}`);
      expect(host).toMatch(new RegExp(`\\n +${rule}: \\S`));
      expect(stdout).toMatch(new RegExp(`\\] ${rule} ${SIMULATED_INSTANCE_ID_PREFIX}.*\\n +fix: \\S`));
      expect(alerts).toContainEqual(expect.objectContaining({ rule, instance_type: expect.any(String) }));
    },
  );

  it('decides no remediation for any simulated host: efficiency findings only notify', () => {
    expect(decisions.filter((d) => String(d.instance_id).startsWith(SIMULATED_INSTANCE_ID_PREFIX))).toEqual(
      [],
    );
    expect(
      alerts.filter((a) => String(a.instance_id).startsWith(SIMULATED_INSTANCE_ID_PREFIX)).length,
    ).toBeGreaterThanOrEqual(15);
  });

  it('prints the alerts and the waste report', () => {
    expect(stdout).toMatch(/xid_fatal/);
    expect(stdout).toMatch(/Waste report: \d+ GPUs/);
    expect(stdout).toMatch(/REBOOT/);
  });
});
