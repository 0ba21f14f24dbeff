import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { EfaSource } from '../../agent/sources/efa';
import { EfaWindowSchema, MAX_EFA_PORTS_PER_WINDOW } from '../../lambdas/contract';
import {
  DEVICE_COUNTERS,
  type FakeEfaSysfs,
  makeEfaSysfs,
  P5_EFA_DEVICES,
  PORT_COUNTERS_BASE,
  PORT_COUNTERS_R2_17,
} from '../fixtures/efa/make-sysfs';

const T0 = new Date('2026-11-21T10:00:00Z');
const at = (s: number): Date => new Date(T0.getTime() + s * 1000);

let trees: FakeEfaSysfs[] = [];
const tree = (opts: Parameters<typeof makeEfaSysfs>[0] = {}): FakeEfaSysfs => {
  const t = makeEfaSysfs(opts);
  trees.push(t);
  return t;
};

afterEach(() => {
  for (const t of trees) t.cleanup();
  trees = [];
});

const source = (root: string, warnings: { message: string; data?: Record<string, unknown> }[] = []) =>
  new EfaSource({ root, clock: () => T0, onWarning: (message, data) => warnings.push({ message, data }) });

const expectContract = (windows: unknown[]): void => {
  for (const w of windows) expect(EfaWindowSchema.safeParse(w).error).toBeUndefined();
};

describe('EfaSource', () => {
  it('reads the 32 devices of a real p5 into 32 port windows and 32 device windows', () => {
    // Prepare
    const sys = tree();
    const efa = source(sys.root);
    efa.sample(at(0));
    for (const d of P5_EFA_DEVICES) {
      sys.set(d, 1, 'tx_pkts', 1_664_737);
      sys.set(d, 0, 'keep_alive_rcvd', 10);
    }

    // Act
    efa.sample(at(10));
    const windows = efa.window(at(0), at(10));

    // Assess
    expect(P5_EFA_DEVICES).toHaveLength(32);
    expect(windows).toHaveLength(64);
    expect(windows.length).toBeLessThanOrEqual(MAX_EFA_PORTS_PER_WINDOW);
    expect(windows.filter((w) => w.port === 1).map((w) => w.device)).toEqual(
      [...P5_EFA_DEVICES].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })),
    );
    expect(windows.filter((w) => w.port === 0)).toHaveLength(32);
    expect(windows[0]?.device).toBe('rdmap79s0');
    expect(windows[1]?.deltas).toMatchObject({ tx_pkts: 1_664_737, rx_drops: 0, retrans_timeout_events: 0 });
    expect(windows[0]?.deltas).toMatchObject({ keep_alive_rcvd: 10, cmds_err: 0 });
    expect(Object.keys(windows[1]?.deltas ?? {}).sort()).toEqual(
      [...PORT_COUNTERS_BASE, ...PORT_COUNTERS_R2_17].sort(),
    );
    expect(Object.keys(windows[0]?.deltas ?? {}).sort()).toEqual([...DEVICE_COUNTERS].sort());
    expect(windows[0]).toMatchObject({ start: '2026-11-21T10:00:00.000Z', end: '2026-11-21T10:00:10.000Z' });
    expectContract(windows);
  });

  it.each([
    ['a steady counter', [0n, 0n], 0],
    ['a growing counter', [0n, 10n, 25n], 25],
    ['a reset (driver reload): counts from the new value', [100n, 150n, 20n, 30n], 80],
    ['a reset to zero', [500n, 0n], 0],
    ['two resets', [10n, 20n, 5n, 1n, 4n], 10 + 5 + 1 + 3],
    ['values beyond 2^53 (u64 counters)', [18_446_744_073_709_551_000n, 18_446_744_073_709_551_615n], 615],
  ])('sums the non-negative steps of %s', (_name, values, expected) => {
    // Prepare
    const sys = tree({ devices: ['rdmap16s27'] });
    const efa = source(sys.root);

    // Act
    values.forEach((v, i) => {
      sys.set('rdmap16s27', 1, 'rx_drops', v);
      efa.sample(at(i));
    });
    const windows = efa.window(at(0), at(values.length));

    // Assess
    expect(windows.find((w) => w.port === 1)?.deltas.rx_drops).toBe(expected);
    expectContract(windows);
  });

  it('starts each window from the last values of the previous one', () => {
    // Prepare
    const sys = tree({ devices: ['rdmap16s27'] });
    const efa = source(sys.root);
    efa.sample(at(0));
    sys.set('rdmap16s27', 1, 'tx_bytes', 1000);
    efa.sample(at(10));
    const first = efa.window(at(0), at(10));

    // Act
    sys.set('rdmap16s27', 1, 'tx_bytes', 1600);
    efa.sample(at(11));
    sys.set('rdmap16s27', 1, 'tx_bytes', 1700);
    efa.sample(at(20));
    const second = efa.window(at(10), at(20));
    const third = efa.window(at(20), at(30));

    // Assess
    expect(first.find((w) => w.port === 1)?.deltas.tx_bytes).toBe(1000);
    expect(second.find((w) => w.port === 1)?.deltas.tx_bytes).toBe(700);
    expect(third).toEqual([]);
    expectContract([...first, ...second]);
  });

  it('gives no window before a device has two samples', () => {
    // Prepare
    const sys = tree({ devices: ['rdmap16s27'] });
    const efa = source(sys.root);

    // Act
    efa.sample(at(0));
    const windows = efa.window(at(0), at(10));

    // Assess
    expect(windows).toEqual([]);
  });

  it('counts a device that appears mid-window from its first sample', () => {
    // Prepare
    const sys = tree({ devices: ['rdmap79s0'] });
    const efa = source(sys.root);
    efa.sample(at(0));
    sys.addDevice('rdmap80s0', 'r2.17', 1000);
    efa.sample(at(5));

    // Act
    sys.set('rdmap80s0', 1, 'rx_pkts', 1500);
    efa.sample(at(10));
    const windows = efa.window(at(0), at(10));

    // Assess
    expect(windows.find((w) => w.device === 'rdmap80s0' && w.port === 1)?.deltas).toMatchObject({
      rx_pkts: 500,
      tx_pkts: 0,
    });
    expectContract(windows);
  });

  it('keeps the last values of a device that disappears and warns once', () => {
    // Prepare
    const warnings: { message: string; data?: Record<string, unknown> }[] = [];
    const sys = tree({ devices: ['rdmap79s0', 'rdmap80s0'] });
    const efa = source(sys.root, warnings);
    efa.sample(at(0));
    sys.set('rdmap80s0', 1, 'tx_pkts', 40);
    efa.sample(at(1));

    // Act
    sys.removeDevice('rdmap80s0');
    efa.sample(at(2));
    efa.sample(at(3));
    const during = efa.window(at(0), at(10));
    sys.addDevice('rdmap80s0', 'r2.17', 0);
    sys.set('rdmap80s0', 1, 'tx_pkts', 55);
    efa.sample(at(11));
    const after = efa.window(at(10), at(20));

    // Assess
    expect(during.find((w) => w.device === 'rdmap80s0' && w.port === 1)?.deltas.tx_pkts).toBe(40);
    expect(warnings.filter((w) => w.data?.device === 'rdmap80s0')).toHaveLength(1);
    expect(after.find((w) => w.device === 'rdmap80s0' && w.port === 1)?.deltas.tx_pkts).toBe(15);
    expectContract([...during, ...after]);
  });

  it.each([
    ['pre-r2.17', PORT_COUNTERS_BASE.length, false],
    ['r2.17', PORT_COUNTERS_BASE.length + PORT_COUNTERS_R2_17.length, true],
  ] as const)('leaves counters a %s driver lacks absent, never 0', (variant, count, hasNetwork) => {
    // Prepare
    const sys = tree({ devices: ['rdmap16s27'], variant });
    const efa = source(sys.root);

    // Act
    efa.sample(at(0));
    efa.sample(at(10));
    const port = efa.window(at(0), at(10)).find((w) => w.port === 1);

    // Assess
    expect(Object.keys(port?.deltas ?? {})).toHaveLength(count);
    for (const c of PORT_COUNTERS_R2_17) expect(c in (port?.deltas ?? {})).toBe(hasNetwork);
    expect(port?.deltas.lifespan).toBeUndefined();
    expectContract(port ? [port] : []);
  });

  it.each([
    ['an unreadable file', (sys: FakeEfaSysfs) => sys.breakCounter('rdmap16s27', 1, 'rx_drops')],
    ['a value that is not a decimal u64', (sys: FakeEfaSysfs) => sys.set('rdmap16s27', 1, 'rx_drops', 'N/A')],
    ['a negative value', (sys: FakeEfaSysfs) => sys.set('rdmap16s27', 1, 'rx_drops', -5)],
    ['a value above 2^64 - 1', (sys: FakeEfaSysfs) => sys.set('rdmap16s27', 1, 'rx_drops', 2n ** 64n)],
  ])('skips %s and warns once', (_name, spoil) => {
    // Prepare
    const warnings: { message: string }[] = [];
    const sys = tree({ devices: ['rdmap16s27'] });
    spoil(sys);
    const efa = source(sys.root, warnings);

    // Act
    for (let i = 0; i < 3; i++) efa.sample(at(i));
    const port = efa.window(at(0), at(10)).find((w) => w.port === 1);

    // Assess
    expect(port?.deltas.rx_drops).toBeUndefined();
    expect(port?.deltas.rx_pkts).toBe(0);
    expect(warnings).toHaveLength(1);
  });

  it('warns once and gives nothing when the root does not exist', () => {
    // Prepare
    const warnings: { message: string }[] = [];
    const efa = source(join(tmpdir(), 'no-such-efa-root-4711'), warnings);

    // Act
    efa.sample();
    efa.sample();

    // Assess
    expect(efa.window(at(0), at(10))).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(efa.lastSampleAt).toEqual(T0);
  });

  it('throws a RangeError when the window ends before it starts', () => {
    // Prepare
    const efa = source(join(tmpdir(), 'no-such-efa-root-4711'));

    // Act
    const act = () => efa.window(at(10), at(10));

    // Assess
    expect(act).toThrow(RangeError);
  });

  it('reads every hw_counters file of the real ConnectX sysfs layout, not the counters/ directory', () => {
    // Prepare
    const root = mkdtempSync(join(tmpdir(), 'ib-sysfs-'));
    try {
      const text = readFileSync(
        new URL('../fixtures/real/sys-class-infiniband-h100.0.txt', import.meta.url),
        'utf8',
      );
      for (const line of text.split('\n')) {
        const m = /^\/sys\/class\/infiniband\/(\S+): (.*)$/.exec(line);
        if (!m) continue;
        const path = join(root, m[1] ?? '');
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, `${m[2]}\n`);
      }
      const efa = source(root);

      // Act
      efa.sample(at(0));
      efa.sample(at(10));
      const windows = efa.window(at(0), at(10));

      // Assess
      expect(windows.length).toBeGreaterThanOrEqual(8);
      expect(windows.every((w) => w.port === 1)).toBe(true);
      expect(windows[0]?.device).toBe('mlx5_0');
      expect(windows[0]?.deltas).toMatchObject({ rx_write_requests: 0, roce_adp_retrans: 0 });
      expect(windows[0]?.deltas.lifespan).toBeUndefined();
      expect(windows[0]?.deltas.port_rcv_data).toBeUndefined();
      expectContract(windows);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
