import { healthRateRule } from './health-rate-rule';
import type { WindowRule } from './window-rule';

/**
 * Rule `nvlink_crc_rate`: NVLink CRC errors (NVML fields 38 + 45, DCGM 409) grow at ≥
 * `nvlinkCrcErrorsPerMinAtLeast` per minute over the horizon: a bad link, retried at the cost of bandwidth.
 */
export const nvlinkCrcRateRule: WindowRule<'nvlink_crc_rate'> = healthRateRule({
  id: 'nvlink_crc_rate',
  delta: 'nvlink_crc_errors_delta',
  counter: 'nvlink_crc_errors',
  threshold: 'nvlinkCrcErrorsPerMinAtLeast',
  what: 'NVLink CRC errors growing (bad link)',
  remedy:
    'NVLink errors slow every collective of the job and precede Xid 74: checkpoint, drain the node, and have it replaced if the errors continue after a reset.',
});
