import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse as parseCsv } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { parseDcgmExporterText } from '../../../agent/sources/dcgm-exporter';

const PACKAGING = join(import.meta.dirname, '..', '..', '..', 'agent', 'packaging');
const read = (file: string): string => readFileSync(join(PACKAGING, file), 'utf8');
/**
 * HashiCorp's own HCL parser (Go, compiled to WebAssembly). Loaded through `require` with the one
 * signature used here: its typings pull the DOM library into the whole program.
 */
const { parse: parseHcl } = createRequire(import.meta.url)('@cdktf/hcl2json') as {
  parse(fileName: string, text: string): Promise<unknown>;
};
const IMAGE = 'nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.1.3-ubuntu22.04';

/** A systemd unit as section → key → values (repeated keys and space-separated lists flattened). */
function parseUnit(text: string): Record<string, Record<string, string[]>> {
  const unit: Record<string, Record<string, string[]>> = {};
  let section: Record<string, string[]> | undefined;
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const header = /^\[(\w+)\]$/.exec(line);
    if (header) {
      section = {};
      unit[header[1]!] = section;
      continue;
    }
    const eq = line.indexOf('=');
    if (!section || eq < 0) throw new Error(`not a unit line: ${line}`);
    const key = line.slice(0, eq);
    const values = line
      .slice(eq + 1)
      .split(/\s+/)
      .filter(Boolean);
    const known = section[key];
    if (known) known.push(...values);
    else section[key] = values;
  }
  return unit;
}

/** The counters file's rows: field, type, help. */
const counters = (): string[][] =>
  parseCsv(read('dcgm-counters.csv'), {
    comment: '#',
    trim: true,
    skip_empty_lines: true,
    relax_column_count: false,
  });

describe('dcgm-exporter counters file', () => {
  it.each([
    'DCGM_FI_PROF_SM_ACTIVE',
    'DCGM_FI_PROF_SM_OCCUPANCY',
    'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE',
    'DCGM_FI_PROF_DRAM_ACTIVE',
    'DCGM_FI_PROF_PCIE_TX_BYTES',
    'DCGM_FI_PROF_PCIE_RX_BYTES',
  ])('enables %s as a gauge', (field) => {
    // Prepare / Act
    const row = counters().find((r) => r[0] === field);

    // Assess
    expect(row).toEqual([field, 'gauge', expect.stringMatching(/\S/)]);
  });

  it('lists only fields the agent reads, each once, in dcgm-exporter’s three-column form', () => {
    // Prepare
    const rows = counters();
    const scrape = rows.map((r) => `${r[0]}{gpu="0",UUID="GPU-0"} 0.5`).join('\n');

    // Act
    const { ignored_fields, malformed } = parseDcgmExporterText(scrape);

    // Assess
    expect(rows.every((r) => r.length === 3 && /^DCGM_FI_[A-Z0-9_]+$/.test(r[0]!))).toBe(true);
    expect(new Set(rows.map((r) => r[0])).size).toBe(rows.length);
    expect(ignored_fields).toEqual([]);
    expect(malformed).toEqual([]);
  });
});

describe('systemd ordering', () => {
  it('starts the agent after dcgm-exporter and wants it, without requiring it', () => {
    // Prepare / Act
    const agent = parseUnit(read('gpu-sentinel-agent.service')).Unit!;

    // Assess
    expect(agent.After).toContain('dcgm-exporter.service');
    expect(agent.Wants).toContain('dcgm-exporter.service');
    expect(agent.Requires ?? []).not.toContain('dcgm-exporter.service');
  });

  it('runs the exporter before the agent, after Docker, on loopback, with the counters file and a 1 s interval', () => {
    // Prepare / Act
    const unit = parseUnit(read('dcgm-exporter.service'));
    const exec = unit.Service!.ExecStart!;
    const mount = exec[exec.indexOf('-v') + 1]!.split(':');

    // Assess
    expect(unit.Unit!.Before).toEqual(['gpu-sentinel-agent.service']);
    expect(unit.Unit!.After).toContain('docker.service');
    expect(unit.Unit!.Requires).toEqual(['docker.service']);
    expect(exec[exec.indexOf('-p') + 1]).toBe('127.0.0.1:9400:9400');
    expect(mount).toEqual(['@COUNTERS@', '/etc/dcgm-exporter/gpu-sentinel-counters.csv', 'ro']);
    expect(exec[exec.indexOf('-f') + 1]).toBe(mount[1]);
    expect(exec[exec.indexOf('-c') + 1]).toBe('1000');
    expect(exec).toContain('SYS_ADMIN');
    expect(exec).toContain('--pull=never');
    expect(unit.Install!.WantedBy).toEqual(['multi-user.target']);
  });
});

describe('image recipes for dcgm-exporter', () => {
  it('has an Image Builder component that installs the pinned image with the bundle’s script', () => {
    // Prepare / Act
    const doc = parseYaml(read('dcgm-exporter-component.yml'));
    const build = doc.phases.find((p: { name: string }) => p.name === 'build');
    const install = build.steps.find((s: { name: string }) => s.name === 'InstallExporter');
    const image = doc.parameters.find((p: Record<string, unknown>) => 'ExporterImage' in p).ExporterImage;

    // Assess
    expect(doc.schemaVersion).toBe(1);
    expect(doc.phases.map((p: { name: string }) => p.name)).toEqual(['build', 'validate', 'test']);
    expect(build.steps.map((s: { action: string }) => s.action)).toEqual([
      'CreateFolder',
      'S3Download',
      'ExecuteBash',
      'DeleteFolder',
    ]);
    expect(install.inputs.commands).toContain(
      "./agent/install-dcgm-exporter.sh --image '{{ ExporterImage }}'",
    );
    expect(image.default).toBe(IMAGE);
  });

  it('has a Packer step that installs the exporter only when an image is given, before the cleanup', async () => {
    // Prepare / Act
    const hcl = (await parseHcl('packer-snippet.pkr.hcl', read('packer-snippet.pkr.hcl'))) as {
      variable: Record<string, [{ default?: string }]>;
      build: [{ provisioner: { shell: [{ environment_vars: string[]; inline: string[] }] } }];
    };
    const shell = hcl.build[0].provisioner.shell[0];
    const exporter = shell.inline.findIndex((l) => l.includes('install-dcgm-exporter.sh'));
    const cleanup = shell.inline.findIndex((l) => l.startsWith('rm -rf /tmp/gpu-sentinel'));

    // Assess
    expect(hcl.variable.gpu_sentinel_dcgm_exporter_image![0].default).toBe('');
    expect(shell.environment_vars).toContain(
      // biome-ignore lint/suspicious/noTemplateCurlyInString: an HCL interpolation, not a JS template
      'GPU_SENTINEL_DCGM_EXPORTER_IMAGE=${var.gpu_sentinel_dcgm_exporter_image}',
    );
    expect(shell.inline[exporter]).toMatch(/^if \[ -n "\$GPU_SENTINEL_DCGM_EXPORTER_IMAGE" \]; then /);
    expect(exporter).toBeGreaterThan(0);
    expect(exporter).toBeLessThan(cleanup);
  });
});

describe('install-dcgm-exporter.sh', () => {
  let dir: string;
  let bundle: string;

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-dcgm-install-'));
    bundle = join(dir, 'bundle');
    mkdirSync(bundle);
    for (const f of [
      'install-dcgm-exporter.sh',
      'install-common.sh',
      'dcgm-exporter.service',
      'dcgm-counters.csv',
    ])
      copyFileSync(join(PACKAGING, f), join(bundle, f));
    chmodSync(join(bundle, 'install-dcgm-exporter.sh'), 0o755);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the script, always with `--root` (the tests may run as root). */
  const install = (root: string, ...args: string[]) =>
    spawnSync(join(bundle, 'install-dcgm-exporter.sh'), ['--root', root, ...args], {
      encoding: 'utf8',
      env: { PATH: '/usr/bin:/bin' },
    });

  it('lays down the counters file and the unit with the image and the counters path filled in', () => {
    // Prepare
    const root = join(dir, 'root-ok');

    // Act
    const result = install(root, '--image', IMAGE);

    // Assess
    expect(result.status).toBe(0);
    expect(readFileSync(join(root, 'etc/gpu-sentinel/dcgm-counters.csv'), 'utf8')).toBe(
      read('dcgm-counters.csv'),
    );
    const exec = parseUnit(readFileSync(join(root, 'etc/systemd/system/dcgm-exporter.service'), 'utf8'))
      .Service!.ExecStart!;
    expect(exec).toContain(IMAGE);
    expect(exec).toContain(
      '/etc/gpu-sentinel/dcgm-counters.csv:/etc/dcgm-exporter/gpu-sentinel-counters.csv:ro',
    );
    expect(exec.join(' ')).not.toContain('@');
  });

  it.each([
    ['no image', []],
    ['an unpinned image', ['--image', 'nvcr.io/nvidia/k8s/dcgm-exporter:latest']],
    ['an image without a tag', ['--image', 'nvcr.io/nvidia/k8s/dcgm-exporter']],
  ])('refuses %s, naming --image', (_name, args) => {
    // Prepare / Act
    const result = install(join(dir, 'root-bad'), ...args);

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('`--image`');
  });

  it('leaves a dcgm-exporter unit it did not write alone', () => {
    // Prepare
    const root = join(dir, 'root-foreign');
    mkdirSync(join(root, 'etc/systemd/system'), { recursive: true });
    writeFileSync(join(root, 'etc/systemd/system/dcgm-exporter.service'), '[Unit]\nDescription=theirs\n');

    // Act
    const result = install(root, '--image', IMAGE);

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('was not written by gpu-sentinel');
    expect(readFileSync(join(root, 'etc/systemd/system/dcgm-exporter.service'), 'utf8')).toContain('theirs');
  });
});
