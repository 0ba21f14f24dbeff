import { systemClock } from '../clock';
import type { AgentConfig } from '../config';
import { doctorExitCode, renderDoctorReport, runDoctor } from '../doctor';
import { AGENT_VERSION } from '../version';

/**
 * `gpu-sentinel doctor` (and `gpu-sentinel-agent doctor` on a host or in an AMI build): runs every
 * check of `runDoctor` against the resolved agent configuration and prints one ✓/✗/– line per
 * check, with the fix under each failure.
 *
 * @param config - the resolved agent configuration
 * @param write - stdout writer
 * @returns the exit code: 0 when no check failed, 1 otherwise
 */
export async function runDoctorCommand(config: AgentConfig, write: (s: string) => void): Promise<number> {
  const results = await runDoctor({
    config,
    version: AGENT_VERSION,
    clock: systemClock,
    uid: process.getuid?.() ?? -1,
  });
  write(renderDoctorReport(results));
  return doctorExitCode(results);
}
