import {
  MAX_GPU_INSTANCE_ID,
  MIG_PROFILE_RULE,
  migComputeSlices,
  migProfileSlices,
} from '../../lambdas/contract/mig';
import type { MigSliceReading } from '../window/mig-slices';
import type { DcgmGpuReading } from './dcgm-exporter';
import { workloadsFromDcgm } from './dcgm-workload';

/**
 * The MIG slices of one dcgm-exporter GPU reading, as the agent sends them (one window per slice):
 * each instance's id, profile, GR engine activity (its `gpu_util`), framebuffer used where given,
 * and the pod its labels name (checked as `workloadsFromDcgm` checks a GPU's).
 *
 * @param reading - one GPU of a scrape (`parseDcgmExporterText(...).gpus[i]`)
 * @returns the slices by instance id; `undefined` when the GPU is not in MIG mode, or when a slice's
 *   profile is missing or not a MIG profile, or the profiles hold more compute slices than the GPU
 *   has — the GPU is then measured whole (its activity weighted by compute share), as before
 */
export function migSliceReadings(reading: DcgmGpuReading): MigSliceReading[] | undefined {
  const instances = reading.mig_instances;
  if (instances === undefined || instances.length === 0) return undefined;
  let slices = 0;
  for (const inst of instances) {
    const profile = inst.gpu_instance_profile;
    if (
      profile === undefined ||
      !MIG_PROFILE_RULE.pattern.test(profile) ||
      inst.gpu_instance_id > MAX_GPU_INSTANCE_ID
    )
      return undefined;
    slices += migProfileSlices(profile) ?? 0;
  }
  if (slices > migComputeSlices(reading.gpu.name)) return undefined;
  return instances.map((inst) => {
    const [held] = workloadsFromDcgm([{ gpu: reading.gpu, metrics: {}, labels: inst.labels }]).held;
    return {
      gpu_instance_id: inst.gpu_instance_id,
      gpu_instance_profile: inst.gpu_instance_profile as string,
      ...(inst.gr_engine_active === undefined ? {} : { gpu_util: inst.gr_engine_active }),
      ...(inst.fb_used_bytes === undefined ? {} : { fb_used_bytes: inst.fb_used_bytes }),
      ...(held === undefined ? {} : { k8s: held.k8s }),
    };
  });
}
