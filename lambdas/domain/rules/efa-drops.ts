import type { EfaWindow } from '../../contract';
import { NOT_JUDGED } from './rule';
import { windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/** EFA port counters that are trouble whenever they grow (reference gpu.md §4.2). */
const EVENT_COUNTERS = [
  'retrans_timeout_events',
  'impaired_remote_conn_events',
  'unresponsive_remote_events',
] as const;

interface PortTrouble {
  readonly port: EfaWindow;
  /** Sum of the trouble counters, for ranking the port that stands out. */
  readonly score: number;
  readonly reasons: readonly string[];
  /** Windows of the batch in which this device/port was in trouble (a merged batch has several). */
  windows: number;
}

/**
 * Rule `efa_drops` (docs/design.md §6, reference gpu.md §4.2): from the batch's EFA deltas (counters are
 * cumulative; the agent sends deltas, so a reset is never growth), a port is in trouble when `rx_drops`
 * grew by ≥ `efaRxDropsAtLeast`, when `retrans_pkts / tx_pkts ≥ efaRetransRatioAtLeast`, or when any of
 * `retrans_timeout_events`, `impaired_remote_conn_events`, `unresponsive_remote_events` grew. Counters a
 * driver does not have are absent and judge nothing. The summary names the device/port that stands out
 * (the most trouble, in its worst window); a port in trouble in several windows of a merged batch counts
 * once. Judged when the batch has EFA windows. Warning, notify only; never resolved (a
 * quiet 10 s window says little), re-sent after the cooldown while drops recur.
 */
export const efaDropsRule: WindowRule<'efa_drops'> = {
  id: 'efa_drops',
  reads: 'horizons',
  kind: 'health',
  resolves: false,
  evaluate: (input, ctx) => {
    const ports = input.batch.efa ?? [];
    if (ports.length === 0) return NOT_JUDGED;
    const t = ctx.thresholds;
    // One entry per device/port: its worst window. A merged batch (a minute of 10 s windows) carries
    // each port once per window, and a port in trouble in six windows is one port in trouble.
    const byPort = new Map<string, PortTrouble>();
    for (const port of ports) {
      const d = port.deltas;
      const reasons: string[] = [];
      let score = 0;
      const drops = d.rx_drops;
      if (drops !== undefined && drops >= t.efaRxDropsAtLeast) {
        reasons.push(`rx_drops +${drops}`);
        score += drops;
      }
      const retrans = d.retrans_pkts;
      const tx = d.tx_pkts;
      if (retrans !== undefined && tx !== undefined && tx > 0 && retrans / tx >= t.efaRetransRatioAtLeast) {
        reasons.push(`retrans_pkts ${((retrans / tx) * 100).toFixed(1)} % of tx_pkts`);
        score += retrans;
      }
      for (const counter of EVENT_COUNTERS) {
        const n = d[counter];
        if (n !== undefined && n > 0) {
          reasons.push(`${counter} +${n}`);
          score += n;
        }
      }
      if (reasons.length === 0) continue;
      const key = `${port.device}/${port.port}`;
      const seen = byPort.get(key);
      if (seen === undefined) byPort.set(key, { port, score, reasons, windows: 1 });
      else if (score > seen.score) byPort.set(key, { port, score, reasons, windows: seen.windows + 1 });
      else seen.windows += 1;
    }
    const troubled = [...byPort.values()];
    if (troubled.length === 0) return { judged: true, findings: [] };
    troubled.sort((a, b) => b.score - a.score);
    const worst = troubled[0] as PortTrouble;
    const name = (p: EfaWindow): string => `${p.device} port ${p.port}`;
    return {
      judged: true,
      findings: [
        windowFinding(input, {
          rule: 'efa_drops',
          severity: 'warning',
          gpus: [],
          what: `EFA ${name(worst.port)} stands out: ${worst.reasons.join(', ')}${troubled.length > 1 ? ` (${troubled.length} ports in trouble)` : ''}`,
          remedy:
            'Fabric trouble slows every collective of a multi-node job: check the security group allows all traffic within itself, run the EFA test (fi_pingpong) between the nodes, and have the node replaced if one port keeps dropping.',
          evidence: {
            worst_port: name(worst.port),
            ports_in_trouble: troubled
              .map(
                (p) =>
                  `${name(p.port)}: ${p.reasons.join(', ')}${p.windows > 1 ? ` (worst of ${p.windows} windows)` : ''}`,
              )
              .join('; '),
            window_start: worst.port.start,
            window_end: worst.port.end,
          },
          costed: false,
          wastedUsdPerHour: 0,
        }),
      ],
    };
  },
};
