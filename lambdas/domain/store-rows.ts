import type { Batch } from '../contract';
import { brokenSinceFor } from './broken-marks';
import { efaRowsOf } from './efa-rows';
import { gpuOwnerOf } from './gpu-owner';
import { computeLedger } from './ledger';
import type { InstancePrice } from './pricing';
import { windowSlotKey } from './rules/gpu-ref';
import type { Diagnosis, StoreRows } from './types';

/** What a batch's rows carry besides the batch itself. */
export interface StoreRowsInput {
  /** The instance price the ledger of every flush window uses (see `priceFor`). */
  readonly price: InstancePrice;
  /**
   * gpuKey → since when broken, ISO 8601: the stored marks merged with this batch's own
   * (`withBrokenMarks`), so the batch's first fatal window is already `broken`.
   */
  readonly broken: ReadonlyMap<string, string>;
  /**
   * GPU key (`windowSlotKey`: `3`, a MIG slice `3/gi7`) → the diagnosis of its judged horizon; a GPU
   * without one stores none.
   */
  readonly diagnoses: ReadonlyMap<string, Diagnosis>;
}

/**
 * The rows one batch writes to the store (docs/design.md §4): one `gpu_windows` row per flush window
 * with its waste ledger (docs/design.md §5; horizon windows are for the rules and never stored),
 * one `efa_windows` row per EFA device/port and run of consecutive windows (`efaRowsOf`: a p5's minute
 * is 64 rows, not 384), one `events` row per event. Dimensions come from the
 * (server-enriched) `host`: `team` from its tags; `job` and `pod` from its `job` tag, each window's
 * `k8s` (dcgm-exporter) or its processes' cgroup owners, in that order (`gpuOwnerOf`); every row carries the batch's `seq` (the store's record version, so a retried batch
 * overwrites itself).
 *
 * @param batch - a validated, enriched batch whose events are attributed to GPUs (`attributeEventsToGpus`)
 * @param input - price, broken marks and diagnoses
 * @returns the rows, in the batch's order
 * @throws {LedgerInputError} when a flush window's end is not after its start (`computeLedger`)
 */
export function storeRowsOf(batch: Batch, input: StoreRowsInput): StoreRows {
  const { host } = batch;
  return {
    gpu: batch.windows
      .filter((w) => w.kind === 'flush')
      .map((w) => ({ w, owner: gpuOwnerOf(w, host.tags?.job) }))
      .map(({ w, owner }) => ({
        time: w.end,
        start: w.start,
        instance_id: host.instance_id,
        instance_type: host.instance_type,
        region: host.region,
        az: host.az,
        gpu_index: w.gpu.index,
        gpu_uuid: w.gpu.uuid,
        gpu_name: w.gpu.name,
        gpu_instance_id: w.gpu_instance_id,
        gpu_instance_profile: w.gpu_instance_profile,
        team: host.tags?.team,
        job: owner.job,
        namespace: w.k8s?.namespace,
        pod: owner.pod,
        container: w.k8s?.container,
        batch_id: batch.batch_id,
        seq: batch.seq,
        metrics: w.metrics,
        ledger: computeLedger(w, input.price, {
          brokenSince: brokenSinceFor(input.broken, w),
          diagnosis: input.diagnoses.get(windowSlotKey(w)),
        }),
      })),
    efa: efaRowsOf(batch),
    events: (batch.events ?? []).map((e) => ({
      time: e.at,
      instance_id: host.instance_id,
      instance_type: host.instance_type,
      gpu_index: e.gpu_index,
      pci_bus_id: e.pci_bus_id,
      kind: e.kind,
      xid: e.xid,
      source: e.source,
      pid: e.pid,
      process_name: e.process_name,
      detail: e.detail,
      batch_id: batch.batch_id,
      seq: batch.seq,
    })),
  };
}
