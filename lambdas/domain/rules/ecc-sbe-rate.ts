import { healthRateRule } from './health-rate-rule';
import type { WindowRule } from './window-rule';

/**
 * Rule `ecc_sbe_rate`: corrected (single-bit) volatile ECC errors (`nvmlDeviceGetTotalEccErrors(CORRECTED,
 * VOLATILE)`, DCGM 310) grow at ≥ `eccSbePerMinAtLeast` per minute over the horizon: memory cells going bad
 * (Xid 92, excessive SBE, and row remaps follow).
 */
export const eccSbeRateRule: WindowRule<'ecc_sbe_rate'> = healthRateRule({
  id: 'ecc_sbe_rate',
  delta: 'ecc_sbe_volatile_delta',
  counter: 'ecc_sbe_volatile',
  threshold: 'eccSbePerMinAtLeast',
  what: 'corrected single-bit ECC errors growing',
  remedy:
    'Corrected ECC errors growing precede row remaps and uncorrectable errors: checkpoint often, reset the GPU at the next drain so pending remaps apply, and replace the node if the rate persists.',
});
