import { gpuConditionRule } from './gpu-condition-rule';
import type { HorizonGpu } from './horizon-input';
import type { Thresholds } from './thresholds';
import { percent, perGpu } from './window-finding';
import type { WindowRule } from './window-rule';

/** `nvmlClocksEventReasonHwPowerBrakeSlowdown`: an external power-brake signal cut the clocks (docs/nvml.md §5). */
const HW_POWER_BRAKE = 0x80;

function capped(g: HorizonGpu, t: Thresholds): boolean {
  const ratio = g.window.metrics.power_throttle_ratio;
  return ratio !== undefined && ratio >= t.powerThrottleRatioAtLeast;
}

/** True when the GPU's horizon saw the HW power brake (bit 0x80 in the OR of its clocks-event reasons). */
function powerBrake(g: HorizonGpu): boolean {
  const reasons = g.window.metrics.clocks_event_reasons;
  return reasons !== undefined && ((reasons % 2 ** 32) & HW_POWER_BRAKE) !== 0;
}

/**
 * Dollars an hour lost to power throttling: each capped GPU's price share × `power_throttle_ratio`
 * (the share of the horizon its clocks were held down by the power cap or brake).
 */
function throttledUsdPerHour(gpus: readonly HorizonGpu[]): number {
  return gpus.reduce((sum, g) => sum + g.costUsdPerHour * (g.window.metrics.power_throttle_ratio ?? 0), 0);
}

/** ` ($x.xx/h of GPU time throttled)`, or nothing when it rounds to zero (never "$0.00"). */
const lostPhrase = (usd: number): string =>
  usd >= 0.005 ? ` ($${usd.toFixed(2)}/h of GPU time throttled)` : '';

const watts = (v: number): string => `${Math.round(v)} W`;

/**
 * Rule `power_throttle` (docs/design.md §6): the power cap held the clocks down in ≥
 * `powerThrottleRatioAtLeast` (20 %) of the horizon (`power_throttle_ratio`: NVML's power-violation
 * time over the wall time, or the share of samples with SW power cap 0x4 / HW power brake 0x80).
 * Warning when the HW power brake (0x80, an external signal from the board or chassis power
 * delivery) was seen, info otherwise: a GPU that runs at its power limit under full load is
 * power-capped by design, and the finding is then the price of that cap, not a fault. Notify only.
 * The throttled time is priced as `throttled_usd_per_hour` = Σ price share × `power_throttle_ratio`
 * (docs/detection.md §3); thermal throttling is the `thermal_throttle` rule's.
 */
export const powerThrottleRule: WindowRule<'power_throttle'> = gpuConditionRule({
  id: 'power_throttle',
  kind: 'health',
  judges: (g) => g.window.metrics.power_throttle_ratio !== undefined,
  fires: capped,
  severity: (gpus) => (gpus.some(powerBrake) ? 'warning' : 'info'),
  what: (gpus) =>
    gpus.some(powerBrake)
      ? `clocks cut by the hardware power brake: the job runs slower than it pays for${lostPhrase(throttledUsdPerHour(gpus))}`
      : `clocks held down by the power cap: the job runs slower than it pays for${lostPhrase(throttledUsdPerHour(gpus))}`,
  remedy:
    'Power: compare power_limit_w with the board’s default (nvidia-smi -q -d POWER: Default vs Enforced Power Limit) and restore a limit someone lowered; a GPU at its default limit under full load is capped by design (the dollars are the price of the cap). A HW power brake is the chassis or power supply: open an AWS support case with the instance id.',
  evidence: (gpus, t) => ({
    power_throttle_ratio: perGpu(gpus, (g) => g.window.metrics.power_throttle_ratio),
    power_w: perGpu(gpus, (g) => g.window.metrics.power_w, watts),
    power_limit_w: perGpu(gpus, (g) => g.window.metrics.power_limit_w, watts),
    hw_power_brake: gpus.some(powerBrake),
    throttle_ratio_at_least: percent(t.powerThrottleRatioAtLeast),
    throttled_usd_per_hour: Math.round(throttledUsdPerHour(gpus) * 1000) / 1000,
  }),
});
