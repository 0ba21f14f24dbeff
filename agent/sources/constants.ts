/**
 * Limits and intervals of the agent's sources, each with its unit and where it comes from.
 */

/**
 * First wait before the local dcgm-exporter is probed again after it did not answer (or gave no
 * profiling ratios), ms. dcgm-exporter needs the DCGM host engine up first; on a p4d at boot both
 * come up within seconds to a minute of the agent, so the first re-probe is soon.
 */
export const DCGM_REPROBE_INITIAL_MS = 15_000;

/**
 * Longest wait between two re-probes of dcgm-exporter, ms (10 min): the back-off doubles from
 * {@link DCGM_REPROBE_INITIAL_MS} (15 s, 30 s, 1 min, 2 min, 4 min, 8 min, then every 10 min), so a
 * host that never runs an exporter costs one refused loopback connection per 10 minutes.
 */
export const DCGM_REPROBE_MAX_MS = 600_000;

/**
 * Scrapes in a row without profiling ratios (no answer, or an answer without `DCGM_FI_PROF_*`)
 * before `profiling_source` goes from `dcgm` to `none`: one slow scrape (500 ms timeout on a busy
 * host) is not a loss; three at the 1 s poll are.
 */
export const DCGM_LOSS_AFTER_MISSES = 3;

/**
 * How often dcgm-exporter is scraped when it is read only for its Kubernetes pod labels (NVML GPM
 * gives the profiling counters, or the exporter exports none), ms: a pod holds a GPU for minutes
 * to days, so once per 10 s flush window is enough.
 */
export const DCGM_LABEL_REFRESH_MS = 10_000;
