import { afterEach, describe, expect, it, vi } from 'vitest';
import { NvmlEventWatcher, type NvmlLogger, NvmlSource } from '../../../agent/sources/nvml';
import { EventSchema, type GpuEvent } from '../../../lambdas/contract';
import {
  fakeNvmlCallCount,
  fakeNvmlPath,
  injectFakeNvmlEvent,
  setFakeNvmlEnv,
  setFakeNvmlLostGpu,
} from '../../setup/fake-nvml';

const NOW = new Date('2026-11-21T10:00:00.123Z');
const AT = '2026-11-21T10:00:00.123000Z';
const WAIT_MS = 20;

let watcher: NvmlEventWatcher | undefined;
afterEach(async () => {
  setFakeNvmlLostGpu(-1);
  await watcher?.stop();
  watcher = undefined;
});

function startWatcher(logger?: NvmlLogger, waitTimeoutMs = WAIT_MS) {
  const events: GpuEvent[] = [];
  watcher = NvmlEventWatcher.start({
    libraryPath: fakeNvmlPath(),
    onEvent: (event) => events.push(event),
    clock: () => NOW,
    waitTimeoutMs,
    ...(logger === undefined ? {} : { logger }),
  });
  return { watcher, events };
}

describe('NvmlEventWatcher', () => {
  it('delivers queued XIDs as contract events, in order, with the GPU index and bus id', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', XID_EVENTS: ['3:48', '5:79'] });
    // Act
    const { events } = startWatcher();
    await vi.waitFor(() => expect(events).toHaveLength(2));
    // Assess
    expect(events).toEqual([
      { at: AT, kind: 'xid', source: 'nvml', gpu_index: 3, pci_bus_id: '0000:5d:00.0', xid: 48 },
      { at: AT, kind: 'xid', source: 'nvml', gpu_index: 5, pci_bus_id: '0000:bb:00.0', xid: 79 },
    ]);
    for (const event of events) expect(EventSchema.safeParse(event).success).toBe(true);
  });

  it.each([
    { case: 'an XID injected at runtime', type: 0x8, data: 94, want: { kind: 'xid', xid: 94 } },
    { case: 'an unknown XID', type: 0x8, data: 999, want: { kind: 'xid', xid: 999 } },
    { case: 'a double-bit ECC error', type: 0x2, data: 0, want: { kind: 'ecc_dbe' } },
  ])('turns $case into a $want.kind event', async ({ type, data, want }) => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p4d' });
    const { events } = startWatcher();
    // Act
    injectFakeNvmlEvent(6, type, data);
    await vi.waitFor(() => expect(events).toHaveLength(1));
    // Assess
    expect(events[0]).toEqual({ at: AT, source: 'nvml', gpu_index: 6, pci_bus_id: '0000:a0:1c.0', ...want });
    expect(EventSchema.safeParse(events[0]).success).toBe(true);
  });

  it('ignores event types it did not register', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const { events } = startWatcher();
    // Act
    injectFakeNvmlEvent(0, 0x1, 0); // SingleBitEccError: supported but not registered
    injectFakeNvmlEvent(1, 0x8, 13);
    await vi.waitFor(() => expect(events).toHaveLength(1));
    // Assess
    expect(events[0]).toMatchObject({ kind: 'xid', gpu_index: 1, xid: 13 });
  });

  it('reports a lost GPU once while the wait keeps answering GPU_IS_LOST', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const { events } = startWatcher();
    // Act
    setFakeNvmlLostGpu(4);
    await vi.waitFor(() => expect(events).toHaveLength(1));
    const waits = fakeNvmlCallCount('nvmlEventSetWait_v2');
    await vi.waitFor(() => expect(fakeNvmlCallCount('nvmlEventSetWait_v2')).toBeGreaterThan(waits + 2));
    // Assess
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'gpu_lost',
      source: 'nvml',
      gpu_index: 4,
      pci_bus_id: '0000:9b:00.0',
    });
    expect(EventSchema.safeParse(events[0]).success).toBe(true);
  });

  it('stops after the in-flight wait returns, then frees the set and shuts NVML down', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const { watcher: running } = startWatcher();
    await vi.waitFor(() => expect(fakeNvmlCallCount('nvmlEventSetWait_v2')).toBeGreaterThan(0));
    // Act
    await running.stop();
    // Assess
    expect(running.running).toBe(false);
    expect(fakeNvmlCallCount('nvmlEventSetFree')).toBe(1);
    expect(fakeNvmlCallCount('nvmlShutdown')).toBe(1);
    const waits = fakeNvmlCallCount('nvmlEventSetWait_v2');
    await new Promise((resolve) => setTimeout(resolve, WAIT_MS * 3));
    expect(fakeNvmlCallCount('nvmlEventSetWait_v2')).toBe(waits);
  });

  it('waits in no thread with waitTimeoutMs 0: each drain takes what the driver holds, and stop is immediate', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5', XID_EVENTS: ['3:48'] });
    const { watcher: polled, events } = startWatcher(undefined, 0);
    const waitsAtStart = fakeNvmlCallCount('nvmlEventSetWait_v2');

    // Act
    const first = polled.drain();
    const idle = polled.drain();
    injectFakeNvmlEvent(5, 0x8, 79);
    injectFakeNvmlEvent(6, 0x2, 0);
    const second = polled.drain();
    setFakeNvmlLostGpu(4);
    polled.drain();
    polled.drain();
    await polled.stop();
    const afterStop = polled.drain();

    // Assess
    expect(waitsAtStart).toBe(0);
    expect([first, idle, second, afterStop]).toEqual([1, 0, 2, 0]);
    expect(events.map((e) => `${e.kind}:${e.gpu_index}:${e.xid ?? ''}`)).toEqual([
      'xid:3:48',
      'xid:5:79',
      'ecc_dbe:6:',
      'gpu_lost:4:',
    ]);
    expect(polled.running).toBe(false);
    expect(fakeNvmlCallCount('nvmlEventSetFree')).toBe(1);
  });

  it('registers the supported XID and DBE events on every GPU', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    // Act
    const { watcher: running } = startWatcher();
    // Assess
    expect(running.registeredGpus).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(fakeNvmlCallCount('nvmlDeviceGetSupportedEventTypes')).toBe(8);
    expect(fakeNvmlCallCount('nvmlDeviceRegisterEvents')).toBe(8);
  });

  it.each([
    { case: 'NOT_SUPPORTED', settings: { NOT_SUPPORTED: ['nvmlDeviceRegisterEvents'] }, level: 'info' },
    { case: 'UNKNOWN', settings: { FAIL_CALL: ['nvmlDeviceRegisterEvents'] }, level: 'warn' },
  ])('skips GPUs whose registration answers $case and logs each at $level', async ({ settings, level }) => {
    // Prepare
    setFakeNvmlEnv(settings);
    const lines: { level: string; data: Record<string, unknown> }[] = [];
    const logger: NvmlLogger = {
      info: (data) => lines.push({ level: 'info', data }),
      warn: (data) => lines.push({ level: 'warn', data }),
    };
    // Act
    const { watcher: idle } = startWatcher(logger);
    await idle.stop();
    // Assess
    expect(idle.registeredGpus).toEqual([]);
    expect(idle.running).toBe(false);
    const registration = lines.filter((l) => l.data.call === 'nvmlDeviceRegisterEvents');
    expect(registration.map((l) => l.data.gpu_index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(registration.every((l) => l.level === level)).toBe(true);
    expect(fakeNvmlCallCount('nvmlEventSetWait_v2')).toBe(0);
  });

  it('shares NVML with a source: closing the source leaves the watcher receiving', async () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const source = NvmlSource.open({ libraryPath: fakeNvmlPath() });
    const { events } = startWatcher();
    // Act
    source.close();
    injectFakeNvmlEvent(2, 0x8, 31);
    await vi.waitFor(() => expect(events).toHaveLength(1));
    // Assess
    expect(events[0]).toMatchObject({ kind: 'xid', gpu_index: 2, xid: 31 });
  });

  it.each([-1, 5001, 1.5])('throws RangeError for waitTimeoutMs %s', (waitTimeoutMs) => {
    // Prepare
    setFakeNvmlEnv({});
    // Act
    const start = () =>
      NvmlEventWatcher.start({ libraryPath: fakeNvmlPath(), onEvent: () => {}, waitTimeoutMs });
    // Assess
    expect(start).toThrow(RangeError);
  });
});
