import { afterEach, describe, expect, it } from 'vitest';
import { NvmlEventSource } from '../../../agent/sources/nvml/nvml-event-source';
import type { SampleSink, SourceContext } from '../../../agent/sources/source';
import type { GpuEvent } from '../../../lambdas/contract';
import { fakeNvmlPath, injectFakeNvmlEvent, setFakeNvmlEnv } from '../../setup/fake-nvml';

const NOW = new Date('2026-11-23T18:30:00.000Z');
/** The poll's sink: the event source writes no readings into it (events go through emit). */
const SINK: SampleSink = {
  gpu: () => expect.unreachable('no reading'),
  row: () => expect.unreachable('no reading'),
  overlay: () => expect.unreachable('no overlay'),
  event: () => expect.unreachable('events go through emit'),
  error: () => expect.unreachable('no error'),
};

let source: NvmlEventSource | undefined;
afterEach(async () => {
  await source?.close();
  source = undefined;
});

function open(waitTimeoutMs: number): GpuEvent[] {
  const events: GpuEvent[] = [];
  source = new NvmlEventSource({ libraryPath: fakeNvmlPath(), waitTimeoutMs });
  const context: SourceContext = {
    clock: () => NOW,
    emit: (e) => events.push(e),
    warn: () => {},
    timers: { setInterval: () => 0, clearInterval: () => {} },
  };
  expect(source.open(context)).toEqual({ supported: true });
  return events;
}

describe('NvmlEventSource', () => {
  it('drains the driver at each poll when it waits in no thread (waitTimeoutMs 0)', () => {
    // Prepare
    setFakeNvmlEnv({ PRESET: 'p5' });
    const events = open(0);

    // Act
    source?.sample(SINK, NOW);
    const idle = events.length;
    injectFakeNvmlEvent(2, 0x8, 79);
    const beforePoll = events.length;
    source?.sample(SINK, NOW);

    // Assess
    expect([idle, beforePoll]).toEqual([0, 0]);
    expect(events).toEqual([
      {
        at: '2026-11-23T18:30:00.000000Z',
        kind: 'xid',
        source: 'nvml',
        gpu_index: 2,
        pci_bus_id: expect.any(String),
        xid: 79,
      },
    ]);
  });
});
