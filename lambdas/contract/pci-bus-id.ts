/**
 * Normalises a PCI bus id to the one form the contract carries everywhere, so the same GPU reads
 * the same from every source: lower-case hex, a 4-digit domain (more digits only when the domain
 * does not fit), 2-digit bus and device, and a function number. NVML gives `00000000:19:00.0`
 * (`nvmlPciInfo_t.busId`, 8-digit upper-case domain), dcgm-exporter labels the same, the kernel
 * log's NVRM Xid lines `0000:19:00` (no function: `.0` is appended; NVIDIA GPUs are function 0),
 * sysfs `0000:19:00.0`.
 *
 * @param raw - `domain:bus:device[.function]` in hex; domain 1–8 digits, bus/device 1–2 digits
 * @returns the normalised id (e.g. `0000:3b:00.0`), or `undefined` when `raw` is not a PCI address
 * @example
 * normalizePciBusId('00000000:A8:00.0'); // '0000:a8:00.0'
 * normalizePciBusId('0000:19:00');       // '0000:19:00.0'
 */
export function normalizePciBusId(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const m = /^([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})(?:\.([0-7]))?$/.exec(raw.trim());
  if (m === null) return undefined;
  const [, domain = '', bus = '', device = '', fn = '0'] = m;
  const domainHex = Number.parseInt(domain, 16).toString(16).padStart(4, '0');
  return `${domainHex}:${bus.toLowerCase().padStart(2, '0')}:${device.toLowerCase().padStart(2, '0')}.${fn}`;
}
