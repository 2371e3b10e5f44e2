import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Who a request really comes from (TRUSTED_PROXIES). `X-Forwarded-For` and `X-Forwarded-Proto`
 * are anyone's to write: they are believed only when the direct peer is a configured proxy, and
 * then the client is the right-most address of the chain that is not a trusted proxy (each
 * proxy appends the address it saw, so everything left of that is the client's own claim).
 * Pure functions, unit-tested (test/unit/trusted-proxies.test.ts).
 */

type Range = [network: ipaddr.IPv4 | ipaddr.IPv6, prefix: number];

export interface TrustedProxies {
  /** Whether `address` (any textual form, IPv4-mapped IPv6 included) is a trusted proxy. */
  trusts(address: string): boolean;
}

/** The client address and the scheme of its request, as Herald believes them. */
export interface RealClient {
  address: string;
  scheme: 'http' | 'https';
}

/** An address as one form: IPv4-mapped IPv6 (`::ffff:10.0.0.1`) as IPv4; null when it is not an IP address. */
export function normalizeAddress(text: string): string | null {
  const bare = bareAddress(text.trim());
  if (isIP(bare) === 0) return null;
  return ipaddr.process(bare).toString();
}

/** An address without the port or brackets a proxy may write (`[::1]:80`, `10.0.0.1:5000`). */
function bareAddress(text: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text);
  if (bracketed) return bracketed[1]!;
  const v4WithPort = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(text);
  return v4WithPort ? v4WithPort[1]! : text;
}

/**
 * Parses TRUSTED_PROXIES: comma-separated addresses and CIDR ranges (`10.0.0.0/8, ::1`), empty
 * for none. Returns the set, or the problem found with the first bad entry.
 */
export function parseTrustedProxies(text: string): TrustedProxies | string {
  const ranges: Range[] = [];
  for (const entry of text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)) {
    const [address = '', prefix] = entry.split('/');
    const normalized = normalizeAddress(address);
    if (normalized === null) return `"${entry}" is not an IP address or CIDR range`;
    const network = ipaddr.parse(normalized);
    const max = network.kind() === 'ipv4' ? 32 : 128;
    const bits = prefix === undefined ? max : /^\d{1,3}$/.test(prefix) ? Number(prefix) : Number.NaN;
    if (!(bits >= 0 && bits <= max)) return `"${entry}" has a prefix length outside 0-${max}`;
    ranges.push([network, bits]);
  }
  return {
    trusts(address) {
      const normalized = normalizeAddress(address);
      if (normalized === null || ranges.length === 0) return false;
      const parsed = ipaddr.parse(normalized);
      // Same kind on both sides, so the IPv4 signature stands for both.
      return ranges.some(([network, bits]) => network.kind() === parsed.kind() && (parsed as ipaddr.IPv4).match(network, bits));
    },
  };
}

/**
 * The real client of a request: the peer itself unless it is a trusted proxy; else, walking
 * `X-Forwarded-For` from the right, the first address that is not a trusted proxy (an entry that
 * is no address stops the walk at the proxy that passed it on). The scheme is the connection's,
 * or the right-most `X-Forwarded-Proto` value when the peer is a trusted proxy.
 */
export function resolveClient(
  request: { peer: string; encrypted: boolean; forwardedFor: string; forwardedProto: string },
  trusted: TrustedProxies,
): RealClient {
  const peer = normalizeAddress(request.peer) ?? request.peer;
  const connectionScheme = request.encrypted ? 'https' : 'http';
  if (!trusted.trusts(peer)) return { address: peer, scheme: connectionScheme };
  let address = peer;
  const chain = request.forwardedFor
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean);
  for (let index = chain.length - 1; index >= 0 && trusted.trusts(address); index -= 1) {
    const hop = normalizeAddress(chain[index]!);
    if (hop === null) break;
    address = hop;
  }
  const proto = request.forwardedProto
    .split(',')
    .map((item) => item.trim().toLowerCase())
    .at(-1);
  return { address, scheme: proto === 'https' || proto === 'http' ? proto : connectionScheme };
}
