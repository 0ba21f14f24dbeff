/**
 * Whether a URL's host is this machine's loopback interface (`localhost`, `127.0.0.0/8`, `::1`):
 * the only place a SigV4-signed request may go over plain `http://` (the local pipeline), since
 * anywhere else its signed headers and body would cross the network in the clear.
 *
 * @param hostname - `URL.hostname` (IPv6 with or without brackets)
 * @returns true for a loopback host
 */
export function isLoopbackHost(hostname: string): boolean {
  const h = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  return h === 'localhost' || h === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}
