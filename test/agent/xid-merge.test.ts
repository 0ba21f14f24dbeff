import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseKernelLog, toXidEvent } from '../../agent/sources/kmsg';
import { XidMerger } from '../../agent/sources/xid-merge';
import { EventSchema, formatIsoMicros, type GpuEvent } from '../../lambdas/contract';

const real = (name: string): string =>
  readFileSync(new URL(`../fixtures/real/${name}`, import.meta.url), 'utf8');

const T0 = Date.parse('2024-11-15T12:02:03Z');

/** A kmsg event as `toXidEvent` builds it: pci bus id only. */
const kmsg = (xid: number, offsetMs: number, pci = '0000:19:00.0'): GpuEvent => ({
  at: formatIsoMicros(T0 + offsetMs),
  kind: 'xid',
  source: 'kmsg',
  xid,
  pci_bus_id: pci,
  pid: 1248209,
  process_name: 'python3.10',
});

/** An NVML event: index and NVML's 8-digit upper-case bus id (`null`: none). */
const nvml = (
  xid: number,
  offsetMs: number,
  index = 0,
  pci: string | null = '00000000:19:00.0',
): GpuEvent => ({
  at: formatIsoMicros(T0 + offsetMs),
  kind: 'xid',
  source: 'nvml',
  xid,
  gpu_index: index,
  ...(pci !== null ? { pci_bus_id: pci } : {}),
});

const emitted = (merger: XidMerger, events: GpuEvent[]): GpuEvent[] => events.filter((e) => merger.add(e));

describe('XidMerger', () => {
  it.each([
    ['keeps the first of an nvml/kmsg pair (nvml first)', [nvml(79, 0), kmsg(79, 300)], ['nvml']],
    ['keeps the first of an nvml/kmsg pair (kmsg first)', [kmsg(79, 0), nvml(79, 300)], ['kmsg']],
    ['pairs at exactly the tolerance', [nvml(79, 0), kmsg(79, 2000)], ['nvml']],
    ['does not pair beyond the tolerance', [nvml(79, 0), kmsg(79, 2001)], ['nvml', 'kmsg']],
    ['does not merge two kmsg events of the same code', [kmsg(13, 0), kmsg(13, 0)], ['kmsg', 'kmsg']],
    ['does not merge two nvml events of the same code', [nvml(13, 0), nvml(13, 1)], ['nvml', 'nvml']],
    ['does not pair different codes', [nvml(48, 0), kmsg(63, 10)], ['nvml', 'kmsg']],
    [
      'does not pair different GPUs',
      [nvml(79, 0, 1, '00000000:2A:00.0'), kmsg(79, 10, '0000:19:00.0')],
      ['nvml', 'kmsg'],
    ],
    ['pairs by normalised PCI bus id across formats', [kmsg(79, 0, '0000:19:00.0'), nvml(79, 5)], ['kmsg']],
    [
      'pairs each event with at most one twin',
      [nvml(94, 0), nvml(94, 10), kmsg(94, 20), kmsg(94, 30), kmsg(94, 40)],
      ['nvml', 'nvml', 'kmsg'],
    ],
    [
      'pairs by gpu index when one side lacks a bus id',
      [nvml(79, 0, 3, null), { ...nvml(79, 5, 3, null), source: 'kmsg' as const }],
      ['nvml'],
    ],
    ['does not pair without a common GPU key', [nvml(79, 0, 3, null), kmsg(79, 5)], ['nvml', 'kmsg']],
  ])('%s', (_name, events, expected) => {
    // Prepare
    const merger = new XidMerger({ clock: () => new Date(T0) });

    // Act
    const kept = emitted(merger, events);

    // Assess
    expect(kept.map((e) => e.source)).toEqual(expected);
  });

  it.each<[string, GpuEvent]>([
    ['a non-XID event', { at: formatIsoMicros(T0), kind: 'ecc_dbe', source: 'nvml', gpu_index: 0 }],
    ['an agent event', { at: formatIsoMicros(T0), kind: 'agent_start', source: 'agent' }],
  ])('always passes %s', (_name, event) => {
    // Prepare
    const merger = new XidMerger({ clock: () => new Date(T0) });

    // Act
    const kept = [merger.add(event), merger.add(event)];

    // Assess
    expect(kept).toEqual([true, true]);
    expect(merger.size).toBe(0);
  });

  it('merges the real Xid 48/63/94 capture with simulated NVML events into exactly the kmsg count', () => {
    // Prepare
    const log = parseKernelLog(real('dmesg-xid48-63-94.iso.log'));
    const fromKmsg = log.records.map((r) => toXidEvent(r)).filter((e): e is GpuEvent => e !== undefined);
    const fromNvml = fromKmsg.map((e, i) =>
      nvml(e.xid ?? 0, Date.parse(e.at) - T0 + (i % 2 === 0 ? 250 : -250), 0, '00000000:19:00.0'),
    );
    const arrivals = fromKmsg.flatMap((k, i) => {
      const n = fromNvml[i] as GpuEvent;
      return i % 3 === 0 ? [n, k] : [k, n];
    });
    const merger = new XidMerger({ clock: () => new Date(T0) });

    // Act
    const kept = emitted(merger, arrivals);

    // Assess
    expect(fromKmsg).toHaveLength(11);
    expect(kept).toHaveLength(11);
    expect(kept.map((e) => e.xid)).toEqual([48, 63, 94, 94, 94, 94, 94, 94, 94, 94, 94]);
    expect(merger.size).toBe(0);
    for (const e of [...kept, ...arrivals]) expect(EventSchema.safeParse(e).error).toBeUndefined();
  });

  it('keeps all 629 Xid 13s and 7 Xid 43s of the real capture when only kmsg reports them', () => {
    // Prepare
    const log = parseKernelLog(real('dmesg-xid13-43.decode.iso.log'));
    const events = log.records.map((r) => toXidEvent(r)).filter((e): e is GpuEvent => e !== undefined);
    const merger = new XidMerger({ clock: () => new Date(T0) });

    // Act
    const kept = emitted(merger, events);

    // Assess
    expect(kept.filter((e) => e.xid === 13)).toHaveLength(629);
    expect(kept.filter((e) => e.xid === 43)).toHaveLength(7);
  });

  it('forgets entries older than the tolerance by the clock, so memory stays bounded', () => {
    // Prepare
    let nowMs = T0;
    const merger = new XidMerger({ toleranceMs: 2000, clock: () => new Date(nowMs) });
    for (let i = 0; i < 100; i++) merger.add(kmsg(13, i));

    // Act
    nowMs += 2001;
    const late = merger.add(nvml(13, 50));

    // Assess
    expect(late).toBe(true);
    expect(merger.size).toBe(1);
  });

  it('keeps at most maxEntries unpaired events', () => {
    // Prepare
    const merger = new XidMerger({ clock: () => new Date(T0), maxEntries: 10 });

    // Act
    for (let i = 0; i < 50; i++) merger.add(kmsg(13, i));

    // Assess
    expect(merger.size).toBe(10);
  });

  it.each([
    ['a negative tolerance', { toleranceMs: -1 }],
    ['a NaN tolerance', { toleranceMs: Number.NaN }],
    ['maxEntries 0', { maxEntries: 0 }],
  ])('throws a RangeError for %s', (_name, opts) => {
    // Prepare / Act
    const act = () => new XidMerger(opts);

    // Assess
    expect(act).toThrow(RangeError);
  });
});
