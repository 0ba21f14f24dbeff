/**
 * Normalises an NVML PCI bus id (`nvmlPciInfo_t.busId`, e.g. `00000000:19:00.0`, upper-case hex,
 * 8-digit domain) to the Linux sysfs / kernel-log form `0000:19:00.0`: lower-case hex, the domain
 * as 4 digits (more only when it does not fit), bus and device as 2 digits, function as 1. The
 * kmsg source prints the same form, so events from both sources match by string.
 *
 * @param busId - the NVML string (`domain:bus:device.function`, hex); the legacy
 *   `0000:19:00.0` form is accepted too
 * @returns the normalised id, or `undefined` when `busId` is not a PCI address
 * @example
 * normalizePciBusId('00000000:3B:00.0'); // '0000:3b:00.0'
 */
export function normalizePciBusId(busId: string): string | undefined {
  const match = /^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])$/.exec(busId.trim());
  if (match === null) return undefined;
  const [, domain = '', bus = '', device = '', fn = ''] = match;
  const domainValue = Number.parseInt(domain, 16);
  return `${domainValue.toString(16).padStart(4, '0')}:${bus.toLowerCase().padStart(2, '0')}:${device.toLowerCase().padStart(2, '0')}.${fn}`;
}
