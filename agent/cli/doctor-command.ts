import { systemClock } from '../clock';
import type { AgentConfig } from '../config';
import { type DoctorCheckId, doctorExitCode, renderDoctorReport, runDoctor } from '../doctor';
import { AGENT_VERSION } from '../version';

/**
 * `gpu-sentinel doctor` (and `gpu-sentinel-agent doctor` on a host or in an AMI build): runs every
 * check of `runDoctor` against the resolved agent configuration and prints one ✓/✗/– line per
 * check, with the fix under each failure.
 *
 * @param config - the resolved agent configuration
 * @param write - stdout writer
 * @param only - the checks to report (`--checks`) @default every check
 * @returns the exit code: 0 when no reported check failed, 1 otherwise
 */
export async function runDoctorCommand(
  config: AgentConfig,
  write: (s: string) => void,
  only?: readonly DoctorCheckId[],
): Promise<number> {
  const results = await runDoctor({
    config,
    ...(only ? { only } : {}),
    version: AGENT_VERSION,
    clock: systemClock,
    uid: process.getuid?.() ?? -1,
  });
  write(renderDoctorReport(results));
  return doctorExitCode(results);
}
