import { spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_GLIBC_TUNABLES, AGENT_SEA_EXEC_ARGV } from '../../../agent/packaging/build-agent-sea';

const PACKAGING = join(import.meta.dirname, '..', '..', '..', 'agent', 'packaging');
const UNIT = 'etc/systemd/system/gpu-sentinel-agent.service';
/** This machine's architecture as the bundles name it (install.sh refuses a bundle for another). */
const ARCH = process.arch === 'arm64' ? 'arm64' : 'x64';
const OTHER_ARCH = ARCH === 'x64' ? 'arm64' : 'x64';
const SYSUSERS = 'usr/lib/sysusers.d/gpu-sentinel-agent.conf';
/** The V8 flags install.sh gives a Node.js of this major: `--no-turbofan` only where Maglev is on by default (22+). */
const flagsFor = (major: number): string =>
  AGENT_SEA_EXEC_ARGV.filter((f) => major >= 22 || f !== '--no-turbofan').join(' ');

let dir: string;
let bundle: string;

/** A stand-in bundle: the real install.sh, unit and sample, a stub agent and koffi package.json. */
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'gpu-sentinel-install-'));
  bundle = join(dir, 'bundle');
  mkdirSync(join(bundle, 'node_modules', 'koffi'), { recursive: true });
  for (const f of ['install.sh', 'install-common.sh', 'gpu-sentinel-agent.service', 'agent.sample.json'])
    copyFileSync(join(PACKAGING, f), join(bundle, f));
  chmodSync(join(bundle, 'install.sh'), 0o755);
  writeFileSync(join(bundle, 'gpu-sentinel-agent.mjs'), "console.log('stub agent');\n");
  writeFileSync(join(bundle, 'gpu-sentinel-agent.mjs.map'), '{"version":3}\n');
  mkdirSync(join(bundle, 'chunks'));
  writeFileSync(join(bundle, 'chunks', 'chunk-STUB1234.mjs'), 'export const stub = 1;\n');
  writeFileSync(join(bundle, 'node_modules', 'koffi', 'package.json'), '{"name":"koffi"}\n');
  writeFileSync(join(bundle, 'VERSION'), `0.0.0-test linux-${ARCH}\n`);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Runs the bundle's install.sh with `args`; never without `--root` (the tests may run as root). */
function install(root: string, ...args: string[]) {
  return spawnSync(
    'bash',
    [join(bundle, 'install.sh'), '--root', root, '--node', process.execPath, ...args],
    {
      encoding: 'utf8',
    },
  );
}

describe('install.sh into a temporary root', () => {
  let root: string;
  let first: ReturnType<typeof install>;
  beforeAll(() => {
    root = join(dir, 'root');
    first = install(root, '--endpoint', 'https://abc123.execute-api.us-east-1.amazonaws.com/prod');
  });

  it('exits 0 and says the user and the unit take effect at the first boot', () => {
    // Prepare / Act: done in beforeAll

    // Assess
    expect(first.stderr).toBe('');
    expect(first.status).toBe(0);
    expect(first.stdout).toContain(
      'declared user gpu-sentinel (/usr/lib/sysusers.d/gpu-sentinel-agent.conf) and enabled gpu-sentinel-agent.service',
    );
    expect(first.stdout).toContain(`installed 0.0.0-test linux-${ARCH}`);
  });

  it.each([
    { path: 'opt/gpu-sentinel/lib/gpu-sentinel-agent.mjs', mode: 0o644 },
    { path: 'opt/gpu-sentinel/lib/chunks/chunk-STUB1234.mjs', mode: 0o644 },
    { path: 'opt/gpu-sentinel/lib/gpu-sentinel-agent.mjs.map', mode: 0o644 },
    { path: 'opt/gpu-sentinel/lib/node_modules/koffi/package.json', mode: 0o644 },
    { path: 'opt/gpu-sentinel/lib/VERSION', mode: 0o644 },
    { path: 'opt/gpu-sentinel/bin/gpu-sentinel-agent', mode: 0o755 },
    { path: 'etc/gpu-sentinel/agent.json', mode: 0o644 },
    { path: 'etc/gpu-sentinel/agent.sample.json', mode: 0o644 },
    { path: UNIT, mode: 0o644 },
    { path: SYSUSERS, mode: 0o644 },
  ])('lays down $path', ({ path, mode }) => {
    // Prepare
    const file = join(root, path);

    // Act
    const stat = statSync(file);

    // Assess
    expect(stat.isFile()).toBe(true);
    expect(stat.mode & 0o777).toBe(mode);
  });

  it('makes the spool folder and links the launcher from /usr/local/bin', () => {
    // Prepare
    const link = join(root, 'usr/local/bin/gpu-sentinel-agent');

    // Act
    const target = readlinkSync(link);

    // Assess
    expect(statSync(join(root, 'var/lib/gpu-sentinel')).isDirectory()).toBe(true);
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    expect(target).toBe('/opt/gpu-sentinel/bin/gpu-sentinel-agent');
  });

  it('writes a launcher that runs the agent with the given node', () => {
    // Prepare / Act
    const launcher = readFileSync(join(root, 'opt/gpu-sentinel/bin/gpu-sentinel-agent'), 'utf8');

    // Assess
    expect(launcher).toBe(
      `#!/bin/sh\nexec ${process.execPath} /opt/gpu-sentinel/lib/gpu-sentinel-agent.mjs "$@"\n`,
    );
  });

  it('writes the sample config with the endpoint given', () => {
    // Prepare / Act
    const config = JSON.parse(readFileSync(join(root, 'etc/gpu-sentinel/agent.json'), 'utf8'));

    // Assess
    expect(config).toEqual({
      ...JSON.parse(readFileSync(join(PACKAGING, 'agent.sample.json'), 'utf8')),
      endpoint: 'https://abc123.execute-api.us-east-1.amazonaws.com/prod',
    });
  });

  it.each([
    `ExecStart=${process.execPath} ${flagsFor(Number(process.versions.node.split('.')[0]))} /opt/gpu-sentinel/lib/gpu-sentinel-agent.mjs agent`,
    'User=gpu-sentinel',
    'Restart=on-failure',
    'NoNewPrivileges=yes',
    'ProtectSystem=strict',
    'ProtectHome=yes',
    'PrivateTmp=yes',
    'StateDirectory=gpu-sentinel',
    'ReadOnlyPaths=-/sys/class/infiniband',
    'DevicePolicy=closed',
    'DeviceAllow=char-nvidia-frontend rw',
    'DeviceAllow=/dev/nvidiactl rw',
    'DeviceAllow=/dev/nvidia-uvm rw',
    'DeviceAllow=/dev/kmsg r',
    'AmbientCapabilities=CAP_SYSLOG',
    'CapabilityBoundingSet=CAP_SYSLOG',
    'MemoryMax=128M',
    'CPUQuota=5%',
    `Environment=GLIBC_TUNABLES=${AGENT_GLIBC_TUNABLES}`,
    'KillSignal=SIGTERM',
    'TimeoutStopSec=120s',
    'WantedBy=multi-user.target',
  ])('writes the unit with %s', (line) => {
    // Prepare / Act
    const unit = readFileSync(join(root, UNIT), 'utf8').split('\n');

    // Assess
    expect(unit).toContain(line);
  });

  it('leaves no placeholder and no kernel-log or device hiding in the unit', () => {
    // Prepare / Act
    const unit = readFileSync(join(root, UNIT), 'utf8');

    // Assess
    expect(unit).not.toMatch(/@[A-Z]+@/);
    expect(unit).not.toMatch(/^(ProtectKernelLogs|PrivateDevices|MemoryDenyWriteExecute)=/m);
  });

  it('passes systemd-analyze verify (systemd is on every machine image; .ci/run installs it otherwise)', () => {
    // Prepare: the unit with its paths pointing into the temp root
    const unit = join(dir, 'verify', 'gpu-sentinel-agent.service');
    mkdirSync(join(dir, 'verify'), { recursive: true });
    writeFileSync(unit, readFileSync(join(root, UNIT), 'utf8').replaceAll('/opt/', `${root}/opt/`));

    // Act
    const result = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });

    // Assess: verify prints unknown keys and bad values, but exits 0 for them
    expect(result.stderr.split('\n').filter((l) => l.includes(unit))).toEqual([]);
    expect(result.status).toBe(0);
  });

  it('enables the unit in the image tree, as systemctl --root reads it', () => {
    // Prepare
    const link = join(root, 'etc/systemd/system/multi-user.target.wants/gpu-sentinel-agent.service');

    // Act
    const result = spawnSync('systemctl', ['--root', root, 'is-enabled', 'gpu-sentinel-agent.service'], {
      encoding: 'utf8',
    });

    // Assess
    expect(readlinkSync(link)).toBe('/etc/systemd/system/gpu-sentinel-agent.service');
    expect(result.stdout.trim()).toBe('enabled');
    expect(result.status).toBe(0);
  });

  it('declares the service user the unit runs as, which systemd-sysusers creates at the first boot', () => {
    // Prepare: a copy of the image tree's sysusers.d, so the tree itself stays as install.sh left it
    const boot = join(dir, 'first-boot');
    mkdirSync(join(boot, 'usr/lib/sysusers.d'), { recursive: true });
    mkdirSync(join(boot, 'etc'), { recursive: true });
    copyFileSync(join(root, SYSUSERS), join(boot, SYSUSERS));
    const unitUser = /^User=(.+)$/m.exec(readFileSync(join(root, UNIT), 'utf8'))?.[1];

    // Act
    const result = spawnSync('systemd-sysusers', ['--root', boot], { encoding: 'utf8' });

    // Assess
    expect(result.status).toBe(0);
    const passwd = readFileSync(join(boot, 'etc/passwd'), 'utf8').split('\n');
    const user = passwd.find((l) => l.startsWith(`${unitUser}:`))?.split(':');
    expect(user?.[5]).toBe('/var/lib/gpu-sentinel');
    expect(user?.[6]).toBe('/usr/sbin/nologin');
    expect(Number(user?.[2])).toBeLessThan(1000);
    const video = readFileSync(join(boot, 'etc/group'), 'utf8')
      .split('\n')
      .find((l) => l.startsWith('video:'));
    expect(video?.split(':')[3]?.split(',')).toContain(unitUser);
  });

  it('is idempotent and keeps an edited config', () => {
    // Prepare
    const configPath = join(root, 'etc/gpu-sentinel/agent.json');
    const edited = '{ "endpoint": "https://edited.example.com/prod", "flushIntervalS": 30 }\n';
    writeFileSync(configPath, edited);
    const unitBefore = readFileSync(join(root, UNIT), 'utf8');

    // Act
    const again = install(root);

    // Assess
    expect(again.status).toBe(0);
    expect(again.stdout).toContain('kept the existing');
    expect(readFileSync(configPath, 'utf8')).toBe(edited);
    expect(readFileSync(join(root, UNIT), 'utf8')).toBe(unitBefore);
    expect(existsSync(join(root, 'opt/gpu-sentinel/lib.new'))).toBe(false);
  });

  it('takes a new --endpoint on a re-run, says so and keeps every other key', () => {
    // Prepare
    const configPath = join(root, 'etc/gpu-sentinel/agent.json');
    writeFileSync(configPath, '{ "endpoint": "https://old.example.com/prod", "flushIntervalS": 30 }\n');

    // Act
    const again = install(root, '--endpoint', 'https://new.example.com/prod');
    const same = install(root, '--endpoint', 'https://new.example.com/prod');

    // Assess
    expect(again.status).toBe(0);
    expect(again.stdout).toContain(
      `endpoint in ${configPath}: https://old.example.com/prod -> https://new.example.com/prod`,
    );
    expect(JSON.parse(readFileSync(configPath, 'utf8'))).toEqual({
      endpoint: 'https://new.example.com/prod',
      flushIntervalS: 30,
    });
    expect(same.status).toBe(0);
    expect(same.stdout).toContain('endpoint already https://new.example.com/prod');
  });

  it('refuses a new --endpoint into a config that is not JSON and leaves the config as it was', () => {
    // Prepare
    const configPath = join(root, 'etc/gpu-sentinel/agent.json');
    writeFileSync(configPath, '{ not json\n');

    // Act
    const result = install(root, '--endpoint', 'https://new.example.com/prod');

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`Expected ${configPath} to hold a JSON object`);
    expect(readFileSync(configPath, 'utf8')).toBe('{ not json\n');
  });
});

describe('install.sh options', () => {
  it('changes nothing with --dry-run and prints what it would do', () => {
    // Prepare
    const root = join(dir, 'dry');

    // Act
    const result = install(root, '--dry-run');

    // Assess
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(`+ write ${root}/etc/systemd/system/gpu-sentinel-agent.service`);
    expect(result.stdout).toContain('dry run: nothing changed');
    expect(existsSync(root)).toBe(false);
  });

  it('installs under another --prefix', () => {
    // Prepare
    const root = join(dir, 'prefix');

    // Act
    const result = install(root, '--prefix', '/usr/lib/gpu-sentinel');

    // Assess
    expect(result.status).toBe(0);
    expect(existsSync(join(root, 'usr/lib/gpu-sentinel/lib/gpu-sentinel-agent.mjs'))).toBe(true);
    expect(readFileSync(join(root, UNIT), 'utf8')).toContain(
      ' /usr/lib/gpu-sentinel/lib/gpu-sentinel-agent.mjs agent',
    );
  });

  it.each([
    { major: 20, without: true },
    { major: 22, without: false },
  ])(
    "gives Node.js $major the single executable's V8 flags, without --no-turbofan: $without",
    ({ major, without }) => {
      // Prepare: a stand-in node answering only the version query install.sh makes
      const root = mkdtempSync(join(dir, `node${major}-`));
      const node = join(dir, `node${major}`);
      writeFileSync(node, `#!/bin/sh\necho ${major}\n`, { mode: 0o755 });

      // Act
      const result = install(root, '--node', node);

      // Assess
      expect(result.stderr).toBe('');
      expect(result.status).toBe(0);
      const exec = readFileSync(join(root, UNIT), 'utf8')
        .split('\n')
        .find((l) => l.startsWith('ExecStart='));
      expect(exec).toBe(
        `ExecStart=${node} ${flagsFor(major)} /opt/gpu-sentinel/lib/gpu-sentinel-agent.mjs agent`,
      );
      expect(exec?.includes('--no-turbofan')).toBe(!without);
    },
  );

  it.each([
    'https://abc123.execute-api.us-east-1.amazonaws.com/prod?a=1&b=2',
    'https://api.example.com/prod?q="quoted"&x=|pipe|\\back',
  ])('writes an endpoint with & and quotes as valid JSON, unchanged: %s', (endpoint) => {
    // Prepare
    const root = mkdtempSync(join(dir, 'amp-'));

    // Act
    const result = install(root, '--endpoint', endpoint);

    // Assess
    expect(result.status).toBe(0);
    const config = JSON.parse(readFileSync(join(root, 'etc/gpu-sentinel/agent.json'), 'utf8'));
    expect(config.endpoint).toBe(endpoint);
  });

  it.each([
    {
      args: ['--bogus'],
      message:
        'Expected one of --root, --arch, --prefix, --node, --endpoint, --start, --dry-run, got `--bogus`',
    },
    { args: ['--prefix', 'opt/x'], message: 'Expected `--prefix` to be an absolute path, got `opt/x`' },
    { args: ['--arch', 'riscv64'], message: 'Expected `--arch` to be x64 or arm64, got `riscv64`' },
    {
      args: ['--arch', OTHER_ARCH],
      message: `Expected a bundle built for linux-${OTHER_ARCH} (the target's architecture), got linux-${ARCH}`,
    },
    {
      args: ['--endpoint', 'abc.example.com'],
      message: 'Expected `--endpoint` to be an http(s) URL, got `abc.example.com`',
    },
  ])('fails on $args with a message', ({ args, message }) => {
    // Prepare
    const root = join(dir, 'bad');

    // Act
    const result = install(root, ...args);

    // Assess
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(message);
    expect(existsSync(root)).toBe(false);
  });
});
