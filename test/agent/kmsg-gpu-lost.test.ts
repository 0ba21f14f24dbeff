import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  findGpuLost,
  GpuLostDetector,
  type GpuLostRecord,
  toGpuLostEvent,
} from '../../agent/sources/kmsg-gpu-lost';
import { XidMerger } from '../../agent/sources/xid-merge';
import { EventSchema, type GpuEvent } from '../../lambdas/contract';

const DIR = new URL('../fixtures/real/gpu-lost/', import.meta.url);
const real = (name: string): string => readFileSync(new URL(name, DIR), 'utf8');
const BOOT = new Date('2026-03-01T00:00:00Z');
const brief = (r: GpuLostRecord): string => `${r.cause}@${r.pci_bus_id ?? '*'}`;

describe('findGpuLost on real kernel logs', () => {
  it('finds a GPU fallen off the bus with no Xid, its PCI id on the first of three dmesg lines, then its failed probe', () => {
    const found = findGpuLost(real('nvsentinel-155-fallen-off-no-xid.dmesg.log'));
    expect(found.map(brief)).toEqual(['fallen_off_bus@0000:b3:00.0', 'probe_failed@0000:b3:00.0']);
    expect(found[0]?.time).toEqual({ kind: 'monotonic', sinceBootS: 1843.308145 });
  });

  it('finds NV_ERR_GPU_IS_LOST with no PCI id as a loss of the instance, never the RPC status lines', () => {
    const found = findGpuLost(real('ogkm-688-gpu-is-lost-dgx-a100.journal.log'), { year: 2024 });
    expect(found.map(brief)).toEqual(['gpu_is_lost@*', 'gpu_is_lost@*', 'gpu_is_lost@*']);
    expect(found[0]?.time).toEqual({ kind: 'wall', epochMs: Date.parse('2024-02-17T08:00:34Z') });
  });

  it('finds RmInitAdapter failures per GPU and ignores the minor-number line and other drivers', () => {
    const found = findGpuLost(real('gpu-operator-649-rminitadapter.dmesg.log'));
    expect(found.map(brief)).toEqual([
      'init_failed@0000:04:01.0',
      'init_failed@0000:04:02.0',
      'init_failed@0000:04:02.0',
      'init_failed@0000:04:01.0',
      'init_failed@0000:04:01.0',
    ]);
  });

  it('reads the syslog format with a dmesg time inside', () => {
    const found = findGpuLost(real('gpu-operator-1146-rminitadapter.syslog.log'), { year: 2024 });
    expect(found.map(brief)).toEqual(Array(3).fill('init_failed@0000:0a:00.0'));
    expect(found[0]?.time?.kind).toBe('wall');
  });

  it('finds Xid 79 and the GPU line of the same loss, and each fatal NVSwitch SXid as an instance loss', () => {
    const found = findGpuLost(real('gpud-sxid-xid79-nvswitch-fatal.dmesg.log'));
    expect(found.map(brief)).toEqual([
      'fallen_off_bus@0000:91:00',
      'fallen_off_bus@0000:91:00.0',
      'nvswitch_fatal@*',
      'nvswitch_fatal@*',
      'nvswitch_fatal@*',
      'nvswitch_fatal@*',
    ]);
    expect(found[2]?.detail).toContain('nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal');
  });

  it('finds nothing in non-fatal SXid lines', () => {
    expect(findGpuLost(real('nvtrust-124-sxid-nonfatal.dmesg.log'))).toEqual([]);
  });

  it("finds the PCI core's failed probe of the nvidia driver", () => {
    const found = findGpuLost(real('cosmic-epoch-2146-probe-failed.txt'));
    expect(found.map(brief)).toEqual(['probe_failed@0000:01:00.0']);
    expect(toGpuLostEvent(found[0] as GpuLostRecord, { bootTime: BOOT })).toBeUndefined();
  });

  it('finds nothing in the Xid captures that lose no GPU', () => {
    const xidLogs = ['dmesg-xid48-63-94.iso.log', 'dmesg-xid13-43.decode.iso.log'];
    for (const f of xidLogs) expect(findGpuLost(real(`../${f}`))).toEqual([]);
  });

  it('every fixture of the folder is replayed by this file', () => {
    const tested = [
      'README.md',
      'nvsentinel-155-fallen-off-no-xid.dmesg.log',
      'ogkm-688-gpu-is-lost-dgx-a100.journal.log',
      'gpu-operator-649-rminitadapter.dmesg.log',
      'gpu-operator-1146-rminitadapter.syslog.log',
      'gpud-sxid-xid79-nvswitch-fatal.dmesg.log',
      'nvtrust-124-sxid-nonfatal.dmesg.log',
      'cosmic-epoch-2146-probe-failed.txt',
    ];
    expect(readdirSync(DIR).sort()).toEqual([...tested].sort());
  });
});

describe('GpuLostDetector formats', () => {
  const body = 'NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.';
  it.each([
    ['raw /dev/kmsg', `3,1234,5678901234,-;${body}`, 'monotonic'],
    ['dmesg --decode -T', `kern  :err   : [Sun Feb 23 16:24:18 2025] ${body}`, 'wall'],
    ['journalctl short-iso', `2025-02-23T16:24:18+0000 ip-10-0-0-1 kernel: ${body}`, 'wall'],
    ['dmesg --time-format iso', `2025-02-23T16:24:18,491363+00:00 ${body}`, 'wall'],
    ['talosctl dmesg', `10.0.0.7: kern: err: [2025-02-23T16:24:18.599488292Z]: ${body}`, 'wall'],
    ['syslog RFC 5424', `<3>1 2025-02-23T16:24:18.5Z ip-10-0-0-1 kernel - - - ${body}`, 'wall'],
    ['journalctl -o short-full', `Sun 2025-02-23 16:24:18 UTC ip-10-0-0-1 kernel: ${body}`, 'wall'],
  ])('%s', (_name, line, kind) => {
    const r = new GpuLostDetector().feed(line);
    expect(r?.cause).toBe('fallen_off_bus');
    expect(r?.pci_bus_id).toBe('0000:3b:00.0');
    expect(r?.time?.kind).toBe(kind);
  });

  it('takes a PCI id without a function number and one with an 8-digit domain', () => {
    const d = new GpuLostDetector();
    expect(d.feed('[ 1.0] NVRM: Xid (PCI:0000:44:00): 79, GPU has fallen off the bus')?.pci_bus_id).toBe(
      '0000:44:00',
    );
    expect(
      d.feed('[ 2.0] NVRM: GPU 00000001:3b:00.0: RmInitAdapter failed! (0x26:0x56:1463)')?.pci_bus_id,
    ).toBe('00000001:3b:00.0');
  });

  it('does not borrow a GPU from an NVRM line more than a few lines back', () => {
    const d = new GpuLostDetector();
    d.feed('[ 1.0] NVRM: GPU at PCI:0000:91:00: GPU-b6c3b2be');
    for (let i = 0; i < 5; i++) d.feed(`[ 1.${i}] eth0: link up`);
    expect(
      d.feed('[ 2.0] NVRM: nvAssertFailedNoLog: Assertion failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST]')
        ?.pci_bus_id,
    ).toBeUndefined();
  });

  it('reads the three-line Xid-less message when the journal repeats its time and host on every line', () => {
    const text = [
      'Feb 14 05:03:42 gpu-1 kernel: NVRM: The NVIDIA GPU 0000:b3:00.0',
      'Feb 14 05:03:42 gpu-1 kernel: NVRM: (PCI ID: 10de:2330) installed in this system has',
      'Feb 14 05:03:42 gpu-1 kernel: NVRM: fallen off the bus and is not responding to commands.',
    ].join('\n');
    const found = findGpuLost(text, { year: 2026 });
    expect(found.map(brief)).toEqual(['fallen_off_bus@0000:b3:00.0']);
    expect(found[0]?.detail).toBe('NVRM: fallen off the bus and is not responding to commands.');
  });

  it('takes a lone failed probe routine as a loss of the instance', () => {
    const r = new GpuLostDetector().feed('[ 5.1] NVRM: The NVIDIA probe routine failed for 1 device(s).');
    expect(r).toMatchObject({ cause: 'probe_failed' });
    expect(r?.pci_bus_id).toBeUndefined();
  });

  it('ignores a message from another driver that mentions a bus', () => {
    expect(new GpuLostDetector().feed('[ 1.0] usb 1-1: device has fallen off the bus')).toBeUndefined();
  });
});

describe('toGpuLostEvent', () => {
  it('dates a monotonic record with the boot time and makes a valid contract event', () => {
    const [r] = findGpuLost(real('nvsentinel-155-fallen-off-no-xid.dmesg.log'));
    const e = toGpuLostEvent(r as GpuLostRecord, { bootTime: BOOT }) as GpuEvent;
    expect(EventSchema.parse(e)).toEqual(e);
    expect(e).toMatchObject({ kind: 'gpu_lost', source: 'kmsg', pci_bus_id: '0000:b3:00.0' });
    expect(e.at).toMatch(/^2026-03-01T00:30:43\.30814/);
    expect(e.detail).toBe('fallen_off_bus: NVRM: fallen off the bus and is not responding to commands.');
    // The merger keeps one event per GPU: the probe failure of the same GPU is the same loss.
    const merger = new XidMerger({ clock: () => BOOT });
    const events = findGpuLost(real('nvsentinel-155-fallen-off-no-xid.dmesg.log')).map(
      (x) => toGpuLostEvent(x, { bootTime: BOOT }) as GpuEvent,
    );
    expect(events.filter((x) => merger.add(x))).toHaveLength(1);
    expect(toGpuLostEvent(r as GpuLostRecord)).toBeUndefined();
  });
});

describe('XidMerger keeps one gpu_lost per GPU', () => {
  const at = (s: number): string => new Date(BOOT.getTime() + s * 1000).toISOString();
  const lost = (s: number, extra: Partial<GpuEvent>): GpuEvent => ({
    at: at(s),
    kind: 'gpu_lost',
    source: 'kmsg',
    ...extra,
  });

  it('NVML first, then the kernel log of the same GPU: one event; another GPU still passes', () => {
    let now = BOOT.getTime();
    const m = new XidMerger({ clock: () => new Date(now) });
    expect(m.add(lost(0, { source: 'nvml', gpu_index: 3, pci_bus_id: '00000000:B3:00.0' }))).toBe(true);
    expect(m.add(lost(1, { pci_bus_id: '0000:b3:00.0' }))).toBe(false);
    expect(m.add(lost(1, { pci_bus_id: '0000:b3:00' }))).toBe(false);
    expect(m.add(lost(2, { pci_bus_id: '0000:19:00.0' }))).toBe(true);
    now += 10_000;
    expect(m.add(lost(10, {}))).toBe(false);
  });

  it('the real RmInitAdapter repeats make one event per GPU', () => {
    const m = new XidMerger({ clock: () => BOOT });
    const events = findGpuLost(real('gpu-operator-649-rminitadapter.dmesg.log'))
      .map((r) => toGpuLostEvent(r, { bootTime: BOOT }) as GpuEvent)
      .filter((e) => m.add(e));
    expect(events.map((e) => e.pci_bus_id)).toEqual(['0000:04:01.0', '0000:04:02.0']);
  });

  it('an instance-wide loss, then a GPU of it: both pass (the second says which); a loss after the hold passes again', () => {
    let now = BOOT.getTime();
    const m = new XidMerger({ clock: () => new Date(now), lostHoldMs: 60_000 });
    expect(m.add(lost(0, {}))).toBe(true);
    expect(m.add(lost(0, {}))).toBe(false);
    expect(m.add(lost(1, { pci_bus_id: '0000:91:00.0' }))).toBe(true);
    now += 61_000;
    expect(m.add(lost(61, { pci_bus_id: '0000:91:00.0' }))).toBe(true);
  });

  it('rejects a hold that is not > 0', () => {
    expect(() => new XidMerger({ lostHoldMs: 0 })).toThrow(/lostHoldMs/);
  });
});
