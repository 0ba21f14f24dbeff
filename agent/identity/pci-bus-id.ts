/**
 * Normalises a PCI bus id to the form the agent sends everywhere: a 4-hex-digit domain, lower-case
 * hex, and a function number (`0000:19:00.0`), so that the same GPU reads the same from NVML
 * (`00000000:19:00.0`), dcgm-exporter labels (`00000000:53:00.0`) and kernel-log XIDs (`0000:19:00`,
 * no function: `.0` is appended; NVIDIA GPUs are function 0). A domain above 0xffff keeps its
 * 8 digits.
 *
 * @param raw - a bus id as `domain:bus:device[.function]`, domain 4–8 hex digits
 * @returns the normalised id, or `undefined` when `raw` is not a PCI bus id
 * @example
 * normalizePciBusId('00000000:A8:00.0'); // '0000:a8:00.0'
 * normalizePciBusId('0000:19:00');       // '0000:19:00.0'
 */
export function normalizePciBusId(raw: string): string | undefined {
  const m = /^([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})(?:\.([0-9A-Fa-f]))?$/.exec(raw.trim());
  if (!m) return undefined;
  const [, domainHex = '', bus = '', device = '', fn = '0'] = m;
  const domain = Number.parseInt(domainHex, 16);
  const domainOut = domain <= 0xffff ? domain.toString(16).padStart(4, '0') : domainHex;
  return `${domainOut}:${bus}:${device}.${fn}`.toLowerCase();
}
