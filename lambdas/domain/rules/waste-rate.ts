import { NOT_JUDGED } from './rule';
import { percent, windowFinding } from './window-finding';
import type { WindowRule } from './window-rule';

/**
 * Rule `waste_rate` (docs/design.md §6): the instance wastes ≥ `wasteRateAtLeast` (50 %) of its price over the
 * horizon: the waste ledger (docs/design.md §5) of every judged horizon window, summed over the GPUs, against what
 * those GPUs cost. Needs a priced instance (an unpriced one has no price to waste) and every GPU judged
 * (GPUs not seen would make the share a guess). Warning, to the owner and finance.
 */
export const wasteRateRule: WindowRule<'waste_rate'> = {
  id: 'waste_rate',
  reads: 'horizons',
  kind: 'efficiency',
  evaluate: (input, ctx) => {
    const { price } = input;
    if (input.gpus.length === 0 || price.price_usd_per_hour <= 0 || input.shortGpus > 0) return NOT_JUDGED;
    const gpuPrice = price.price_usd_per_hour / price.gpu_count;
    const wasted = input.gpus.reduce((sum, g) => sum + g.wastedUsdPerHour, 0);
    const cost = gpuPrice * input.gpus.length;
    const share = wasted / cost;
    if (share < ctx.thresholds.wasteRateAtLeast) return { judged: true, findings: [] };
    const byDiagnosis = new Map<string, number>();
    for (const g of input.gpus)
      byDiagnosis.set(g.diagnosis, (byDiagnosis.get(g.diagnosis) ?? 0) + g.wastedUsdPerHour);
    return {
      judged: true,
      findings: [
        windowFinding(input, {
          rule: 'waste_rate',
          severity: 'warning',
          gpus: [],
          what: `wasting ${percent(share)} of what its ${input.gpus.length} GPUs cost`,
          remedy:
            'Most of this instance’s price buys nothing: act on its efficiency alerts (each names a fix), right-size to fewer or smaller GPUs, or stop it when the job is done.',
          evidence: {
            waste_share: Number(share.toFixed(3)),
            cost_usd_per_hour: Number(cost.toFixed(2)),
            by_diagnosis_usd_per_hour: [...byDiagnosis]
              .sort((a, b) => b[1] - a[1])
              .map(([d, usd]) => `${d} ${usd.toFixed(2)}`)
              .join(', '),
            waste_share_at_least: ctx.thresholds.wasteRateAtLeast,
          },
          wastedUsdPerHour: wasted,
        }),
      ],
    };
  },
};
