import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { type KernelLogOptions, parseKernelLog, toXidEvent } from '../../agent/sources/kmsg';
import { findGpuLost, toGpuLostEvent } from '../../agent/sources/kmsg-gpu-lost';
import { XidMerger } from '../../agent/sources/xid-merge';
import { epochMicros, type GpuEvent } from '../../lambdas/contract';
import {
  DEFAULT_RULE_CONTEXT,
  DEFAULT_XID_POLICY,
  evaluatePointRules,
  xidPolicyFor,
} from '../../lambdas/domain';
import { makeBatch } from '../lambdas/domain/batch-builder';

/**
 * Replays the real kernel logs of test/fixtures/real/kernel-logs/ (public bug reports, see its
 * README) through the agent's readers and the pipeline's rules, and checks what an experienced GPU
 * SRE expects of each: which GPU, which Xids, whether the GPU is gone, and reset / replace / leave
 * it to the application.
 */

const DIR = new URL('../fixtures/real/kernel-logs/', import.meta.url);
const real = (name: string): string => readFileSync(new URL(name, DIR), 'utf8');
/** Boot time for captures with monotonic (seconds since boot) times: a fixed date, never today. */
const BOOT = new Date('2026-03-01T00:00:00Z');
/** A burst of kernel lines goes out in one batch; lines further apart than this go in separate batches. */
const BATCH_GAP_MS = 10 * 60_000;

interface Replay {
  /** `<xid>@<pci>` per Xid line, in log order. */
  readonly xids: string[];
  /** `<cause>@<pci or *>` per `gpu_lost` record, in log order. */
  readonly lost: string[];
  /** The contract events the agent emits (dated, merged): Xids and one `gpu_lost` per GPU. */
  readonly events: GpuEvent[];
  /** `<rule> <xid or -> <action>@<pci>` per finding, over batches cut at {@link BATCH_GAP_MS} gaps. */
  readonly decisions: string[];
}

function replay(name: string, opts: KernelLogOptions = {}): Replay {
  const text = real(name);
  const { records } = parseKernelLog(text, opts);
  const lostRecords = findGpuLost(text, opts);
  const merger = new XidMerger({ clock: () => BOOT });
  const events = [
    ...records.map((r) => toXidEvent(r, { bootTime: BOOT })),
    ...lostRecords.map((r) => toGpuLostEvent(r, { bootTime: BOOT })),
  ]
    .filter((e): e is GpuEvent => e !== undefined)
    .sort((a, b) => epochMicros(a.at) - epochMicros(b.at))
    .filter((e) => merger.add(e));
  return {
    xids: records.map((r) => `${r.xid}@${r.pci_bus_id}`),
    lost: lostRecords.map((r) => `${r.cause}@${r.pci_bus_id ?? '*'}`),
    events,
    decisions: decide(events),
  };
}

/** Cuts the events into batches as the agent sends them (a burst per batch) and runs the point rules. */
function decide(events: readonly GpuEvent[]): string[] {
  const batches: GpuEvent[][] = [];
  let lastMs = Number.NEGATIVE_INFINITY;
  for (const e of events) {
    const ms = epochMicros(e.at) / 1000;
    if (ms - lastMs > BATCH_GAP_MS) batches.push([]);
    batches.at(-1)?.push(e);
    lastMs = ms;
  }
  return batches.flatMap((batch) => {
    const last = epochMicros(batch.at(-1)?.at ?? '') / 1000;
    const now = new Date(Math.ceil(last / 1000) * 1000 + 60_000);
    const findings = evaluatePointRules(
      makeBatch({ events: batch as unknown as Record<string, unknown>[] }, now),
      DEFAULT_RULE_CONTEXT,
      now,
    );
    return findings.map((f) => `${f.rule} ${f.evidence.xid ?? '-'} ${f.action}@${f.pci_bus_id ?? '*'}`);
  });
}

/** The policy's action per Xid code, for captures whose lines carry no time (no event can be dated). */
const policyAction = (xid: number): string => xidPolicyFor(DEFAULT_XID_POLICY, xid).entry.action;

describe('real kernel logs: what an SRE expects', () => {
  it('akash-209 (dmesg -T, driver 535): Xid 79 and the GPU line are one lost GPU at a1:00, replaced; the crash-dump notice is no event', () => {
    const r = replay('akash-209-xid79-crash-dump.dmesg-T.log');
    expect(r.xids).toEqual(['79@0000:a1:00']);
    expect(r.lost).toEqual(['fallen_off_bus@0000:a1:00', 'fallen_off_bus@0000:a1:00.0']);
    expect(r.events.map((e) => `${e.kind}@${e.pci_bus_id}`)).toEqual([
      'xid@0000:a1:00.0',
      'gpu_lost@0000:a1:00.0',
    ]);
    expect(r.events[0]?.at).toBe('2024-04-09T01:21:38.000000Z');
    expect(r.decisions).toEqual(['gpu_lost - replace@0000:a1:00.0', 'xid_fatal 79 replace@0000:a1:00.0']);
  });

  it('akash-244 (dmesg -T, days with one digit): app faults 43 and 31 leave the hardware alone; the contained 94 is told, not replaced', () => {
    const r = replay('akash-244-xid43-31-94.dmesg-T.log');
    expect(r.xids).toEqual(['43@0000:00:05', '43@0000:00:05', '31@0000:00:07', '94@0000:00:08']);
    expect(r.lost).toEqual([]);
    expect(r.events.map((e) => e.at)).toEqual([
      '2024-07-31T23:14:18.000000Z',
      '2024-07-31T23:15:26.000000Z',
      '2024-08-05T03:54:13.000000Z',
      '2024-08-09T13:32:56.000000Z',
    ]);
    expect(r.events[2]).toMatchObject({ pid: 2512125, process_name: 'python3.10' });
    // 43 (the job's channel reset) is ignored by the catalog: no finding at all.
    expect(r.decisions).toEqual(['xid_app 31 notify@0000:00:07.0', 'xid_fatal 94 notify@0000:00:08.0']);
    expect(r.decisions.some((d) => / (reset|replace)@/.test(d))).toBe(false);
  });

  it('vllm-40652 (talosctl dmesg, A100 SXM4): the fatal NVLink 74 and its 154 "GPU Reset Required" reset GPU 48:00; the 45s are their consequence', () => {
    const r = replay('vllm-40652-xid45-74-154.talos.log');
    expect(r.xids).toEqual(['45@0000:48:00', '45@0000:48:00', '74@0000:48:00', '154@0000:48:00']);
    expect(r.lost).toEqual([]);
    expect(r.events).toHaveLength(4);
    expect(r.events[2]).toMatchObject({
      at: '2026-04-22T21:26:20.599717Z',
      xid: 74,
      pid: 22884,
      process_name: 'VLLM::Worker_TP',
    });
    // The two 45s (contexts torn down after the fault) are ignored: no finding.
    expect(r.decisions).toEqual(['xid_fatal 74 reset@0000:48:00.0', 'xid_fatal 154 reset@0000:48:00.0']);
  });

  it('ogkm-1118 (talosctl dmesg, A100 SXM4): the GSP RPC timeout 119 on 0b:00 asks for a reset, not a replacement; the dump lines are no Xid', () => {
    const r = replay('ogkm-1118-xid119-gsp-timeout.talos.log');
    expect(r.xids).toEqual(['119@0000:0b:00']);
    expect(r.lost).toEqual([]);
    expect(r.events[0]).toMatchObject({
      at: '2026-04-22T21:30:51.494604Z',
      pid: 11431,
      process_name: 'gpu-feature-dis',
    });
    expect(r.decisions).toEqual(['xid_fatal 119 reset@0000:0b:00.0']);
  });

  it('gpud README (dmesg --ctime, H100): 13s and 31 are the job; each 109 context-switch timeout asks for a reset of cb:00', () => {
    const r = replay('gpud-xid-readme-xid13-31-109.ctime.log');
    expect(r.xids).toEqual([
      '13@0000:cb:00',
      '13@0000:cb:00',
      '13@0000:cb:00',
      '109@0000:cb:00',
      '31@0000:cb:00',
      '109@0000:cb:00',
    ]);
    expect(r.events[0]?.pid).toBeUndefined();
    expect(r.events[3]).toMatchObject({ pid: 1797828, process_name: 'pt_main_thread' });
    expect(r.decisions).toEqual([
      'xid_fatal 109 reset@0000:cb:00.0',
      'xid_app 13 notify@0000:cb:00.0',
      'xid_app 31 notify@0000:cb:00.0',
      'xid_fatal 109 reset@0000:cb:00.0',
    ]);
  });

  it('bumblebee-677 (plain dmesg, 2015 driver without pid/name): 32 and 31 on 01:00 are application faults', () => {
    const r = replay('bumblebee-677-xid32-31-old-driver.dmesg.log');
    expect(r.xids).toEqual(['32@0000:01:00', '32@0000:01:00', '31@0000:01:00']);
    expect(r.events.every((e) => e.pid === undefined && e.process_name === undefined)).toBe(true);
    expect(r.events[2]?.detail).toBe('Ch 00000003, engmask 00000101, intr 10000000');
    expect(r.decisions).toEqual(['xid_app 31 notify@0000:01:00.0', 'xid_app 32 notify@0000:01:00.0']);
  });

  it("dxvk-1027 (plain dmesg, driver 418, the reporter's elision line): 31, 13 and 32 are the game's, never the hardware", () => {
    const r = replay('dxvk-1027-xid31-13-32-driver418.dmesg.log');
    expect(r.xids).toEqual([
      '31@0000:01:00',
      '13@0000:01:00',
      '13@0000:01:00',
      '13@0000:01:00',
      '13@0000:01:00',
      '32@0000:01:00',
    ]);
    expect(r.events[1]?.detail).toBe('Graphics Exception: Class 0x0 Subchannel 0x0 Mismatch');
    // 31 and the 13s are 66 s apart: one batch, one finding per code.
    expect(r.decisions).toEqual([
      'xid_app 13 notify@0000:01:00.0',
      'xid_app 31 notify@0000:01:00.0',
      'xid_app 32 notify@0000:01:00.0',
    ]);
  });

  it('ogkm-1030 (plain dmesg, open driver 595, `channel 0x…`): one MMU fault 31 of UnrealEditor, an application fault', () => {
    const r = replay('ogkm-1030-xid31-channel-595.dmesg.log');
    expect(r.xids).toEqual(['31@0000:01:00']);
    expect(r.events[0]).toMatchObject({ pid: 13705, process_name: 'UnrealEditor' });
    expect(r.events[0]?.detail).toMatch(/^channel 0x0000000c, intr 00000000\. MMU Fault/);
    expect(r.decisions).toEqual(['xid_app 31 notify@0000:01:00.0']);
  });

  it('ogkm-1150 (`kernel:` lines without a time, driver 590): seven 45s on four GPUs, undatable, ignored as consequences of NVLink5 faults', () => {
    const r = replay('ogkm-1150-xid45-after-nvlink5.kernel.log');
    expect(r.xids).toEqual([
      '45@0000:dc:00',
      '45@0000:ed:00',
      '45@0000:ba:00',
      '45@0000:97:00',
      '45@0000:dc:00',
      '45@0000:ba:00',
      '45@0000:ed:00',
    ]);
    expect(parseKernelLog(real('ogkm-1150-xid45-after-nvlink5.kernel.log')).records[0]).toMatchObject({
      pid: 1818990,
      process_name: 'python3',
      detail: 'Ch 00000001 caused by previous Xid 149',
    });
    expect(r.events).toEqual([]);
    expect(policyAction(45)).toBe('ignore');
  });

  it('gpud-1174 (bare kmsg messages, Blackwell NVLink5): 149 and 145 on 8-digit-free domains 0019/0018, told for a human to decode', () => {
    const r = replay('gpud-1174-xid145-149-nvlink5.kmsg.log');
    expect(r.xids).toEqual(['149@0019:01:00', '149@0000:00:00', '145@0018:01:00']);
    expect(parseKernelLog(real('gpud-1174-xid145-149-nvlink5.kmsg.log')).records[0]?.detail).toMatch(
      /^NETIR Fatal XC0 i0 Link -1 \(0x000fe406/,
    );
    expect(r.events).toEqual([]);
    expect([149, 145].map(policyAction)).toEqual(['notify', 'notify']);
  });

  it('gpu-operator-1146 (RFC 3164 syslog with a dmesg stamp inside): 0a:00 cannot start and 07:00 has a DBE whose page retirement failed; both GPUs replace the instance', () => {
    const r = replay('gpu-operator-1146-xid48-64-rminit.syslog.log', { year: 2024 });
    expect(r.xids).toEqual(['48@0000:07:00', '64@0000:07:00']);
    expect(r.lost).toEqual(Array(3).fill('init_failed@0000:0a:00.0'));
    expect(r.events.map((e) => `${e.kind}:${e.xid ?? '-'}@${e.pci_bus_id}`)).toEqual([
      'gpu_lost:-@0000:0a:00.0',
      'xid:48@0000:07:00.0',
      'xid:64@0000:07:00.0',
    ]);
    // The event says what the driver said, not the syslog host, tag and inner dmesg stamp.
    expect(r.events[0]?.detail).toBe(
      'init_failed: NVRM: GPU 0000:0a:00.0: RmInitAdapter failed! (0x24:0x72:1568)',
    );
    expect(r.events[0]?.at).toBe('2024-12-02T11:38:46.000000Z');
    expect(r.decisions).toEqual([
      'gpu_lost - replace@0000:0a:00.0',
      'xid_fatal 48 reset@0000:07:00.0',
      'xid_fatal 64 replace@0000:07:00.0',
    ]);
  });

  it('ogkm-829 (journalctl -k short, open driver 575): the GSP task exception 120 at driver start asks for a reset of 02:00; the CrashCat report lines are no Xid', () => {
    const r = replay('ogkm-829-xid120-gsp-crashcat.journal.log', { year: 2025 });
    expect(r.xids).toEqual(['120@0000:02:00']);
    expect(r.lost).toEqual([]);
    expect(r.events[0]).toMatchObject({
      at: '2025-04-19T13:16:41.000000Z',
      detail: 'GSP task exception: load access page fault (cause:0xd) @ pc:0x140ca4a, partition:4#0, task:3',
    });
    expect(r.decisions).toEqual(['xid_fatal 120 reset@0000:02:00.0']);
  });

  it('ogkm-1230 (plain dmesg, GSP boot refused: WPR2 already up): a1:00 cannot start, one loss for its three RmInitAdapter failures, no Xid', () => {
    const r = replay('ogkm-1230-gsp-wpr2-rminit.dmesg.log');
    expect(r.xids).toEqual([]);
    expect(r.lost).toEqual(Array(3).fill('init_failed@0000:a1:00.0'));
    expect(r.events).toHaveLength(1);
    expect(r.decisions).toEqual(['gpu_lost - replace@0000:a1:00.0']);
  });

  it('every file of the folder is replayed by this file', () => {
    const tested = [
      'README.md',
      'akash-209-xid79-crash-dump.dmesg-T.log',
      'akash-244-xid43-31-94.dmesg-T.log',
      'vllm-40652-xid45-74-154.talos.log',
      'ogkm-1118-xid119-gsp-timeout.talos.log',
      'gpud-xid-readme-xid13-31-109.ctime.log',
      'bumblebee-677-xid32-31-old-driver.dmesg.log',
      'dxvk-1027-xid31-13-32-driver418.dmesg.log',
      'ogkm-1030-xid31-channel-595.dmesg.log',
      'ogkm-1150-xid45-after-nvlink5.kernel.log',
      'gpud-1174-xid145-149-nvlink5.kmsg.log',
      'gpu-operator-1146-xid48-64-rminit.syslog.log',
      'ogkm-829-xid120-gsp-crashcat.journal.log',
      'ogkm-1230-gsp-wpr2-rminit.dmesg.log',
    ];
    expect(readdirSync(DIR).sort()).toEqual([...tested].sort());
  });
});
