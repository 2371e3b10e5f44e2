import { isIPv4, isIPv6 } from 'node:net';

/**
 * Which IP addresses a webhook may never reach (SSRF): loopback, private (RFC 1918), CGNAT,
 * link-local (with the cloud metadata address), unspecified, multicast, reserved and
 * documentation ranges, IPv6 loopback / ULA / link-local / multicast, and IPv6 forms that
 * carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4), judged by that address.
 * Pure functions: the API uses them on IP-literal URLs at registration, the delivery engine on
 * every resolved address at connect time. Anything that is not an IP address is forbidden
 * (fail closed).
 */

interface Range {
  /** Network address as bytes (4 for IPv4, 16 for IPv6). */
  network: Uint8Array;
  prefix: number;
  name: string;
}

const V4_RANGES: readonly [string, number, string][] = [
  ['0.0.0.0', 8, 'unspecified'],
  ['10.0.0.0', 8, 'private'],
  ['100.64.0.0', 10, 'cgnat'],
  ['127.0.0.0', 8, 'loopback'],
  ['169.254.169.254', 32, 'metadata'],
  ['169.254.0.0', 16, 'link-local'],
  ['172.16.0.0', 12, 'private'],
  ['192.0.0.0', 24, 'reserved'],
  ['192.0.2.0', 24, 'documentation'],
  ['192.88.99.0', 24, 'reserved'],
  ['192.168.0.0', 16, 'private'],
  ['198.18.0.0', 15, 'reserved'],
  ['198.51.100.0', 24, 'documentation'],
  ['203.0.113.0', 24, 'documentation'],
  ['224.0.0.0', 4, 'multicast'],
  ['240.0.0.0', 4, 'reserved'],
];

const V6_RANGES: readonly [string, number, string][] = [
  ['::', 128, 'unspecified'],
  ['::1', 128, 'loopback'],
  ['fd00:ec2::254', 128, 'metadata'],
  ['fe80::', 10, 'link-local'],
  ['fec0::', 10, 'site-local'],
  ['fc00::', 7, 'unique-local'],
  ['ff00::', 8, 'multicast'],
  ['100::', 64, 'reserved'],
  ['64:ff9b:1::', 48, 'reserved'],
  ['2001::', 32, 'reserved'],
  ['2001:db8::', 32, 'documentation'],
];

function v4Bytes(ip: string): Uint8Array {
  return Uint8Array.from(ip.split('.').map(Number));
}

/** 16 bytes of a valid IPv6 address (with `::` and an optional dotted IPv4 tail). */
function v6Bytes(ip: string): Uint8Array {
  let text = ip;
  const tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const bytes = v4Bytes(text.slice(lastColon + 1));
    tail.push((bytes[0]! << 8) | bytes[1]!, (bytes[2]! << 8) | bytes[3]!);
    text = `${text.slice(0, lastColon + 1)}0`;
  }
  const [head = '', rest] = text.split('::');
  const parse = (part: string) => (part === '' ? [] : part.split(':').map((group) => parseInt(group, 16)));
  let groups: number[];
  if (rest === undefined) {
    groups = parse(head);
  } else {
    const left = parse(head);
    const right = parse(rest);
    groups = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  }
  if (tail.length) groups.splice(6, 2, ...tail);
  const out = new Uint8Array(16);
  groups.forEach((group, i) => {
    out[i * 2] = group >> 8;
    out[i * 2 + 1] = group & 0xff;
  });
  return out;
}

function compile(ranges: readonly [string, number, string][], bytes: (ip: string) => Uint8Array): Range[] {
  return ranges.map(([network, prefix, name]) => ({ network: bytes(network), prefix, name }));
}

const V4 = compile(V4_RANGES, v4Bytes);
const V6 = compile(V6_RANGES, v6Bytes);

function inRange(address: Uint8Array, range: Range): boolean {
  let bits = range.prefix;
  for (let i = 0; bits > 0; i += 1, bits -= 8) {
    const mask = bits >= 8 ? 0xff : (0xff << (8 - bits)) & 0xff;
    if ((address[i]! & mask) !== (range.network[i]! & mask)) return false;
  }
  return true;
}

const startsWith = (bytes: Uint8Array, prefix: readonly number[]) => prefix.every((b, i) => bytes[i] === b);

/** The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64, 6to4), if any. */
function embeddedV4(bytes: Uint8Array): Uint8Array | null {
  const zeros = (n: number) => new Array<number>(n).fill(0);
  if (startsWith(bytes, [...zeros(10), 0xff, 0xff])) return bytes.slice(12);
  if (startsWith(bytes, zeros(12))) return bytes.slice(12);
  if (startsWith(bytes, [0x00, 0x64, 0xff, 0x9b, ...zeros(8)])) return bytes.slice(12);
  if (startsWith(bytes, [0x20, 0x02])) return bytes.slice(2, 6);
  return null;
}

/**
 * The name of the forbidden range `ip` falls in (`loopback`, `private`, `cgnat`, `link-local`,
 * `metadata`, `unspecified`, `multicast`, `unique-local`, `site-local`, `reserved`, `documentation`,
 * `invalid`), or null for an address a webhook may reach. Accepts `[v6]` brackets and zone ids.
 */
export function forbiddenRangeOf(ip: string): string | null {
  const address = ip.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (isIPv4(address)) {
    return V4.find((range) => inRange(v4Bytes(address), range))?.name ?? null;
  }
  if (!isIPv6(address)) return 'invalid';
  const bytes = v6Bytes(address);
  const own = V6.find((range) => inRange(bytes, range));
  if (own) return own.name;
  const v4 = embeddedV4(bytes);
  return v4 ? (V4.find((range) => inRange(v4, range))?.name ?? null) : null;
}

/** True when a webhook must not connect to `ip` (see forbiddenRangeOf). */
export function isForbiddenAddress(ip: string): boolean {
  return forbiddenRangeOf(ip) !== null;
}
