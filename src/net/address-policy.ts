import { isIPv4, isIPv6 } from 'node:net';
import ipaddr from 'ipaddr.js';

/**
 * Which IP addresses Herald may never reach on a customer's say-so (SSRF): webhook targets and,
 * in direct delivery, destination MX hosts and MTA-STS policy hosts. Loopback, private
 * (RFC 1918), CGNAT, link-local (with the cloud metadata address), unspecified, multicast,
 * reserved and documentation ranges, IPv6 loopback / ULA / link-local / multicast, and IPv6 forms that
 * carry an IPv4 address (IPv4-mapped, IPv4-compatible, NAT64, 6to4), judged by that address.
 * Pure functions: the API uses them on IP-literal URLs at registration, the webhook delivery
 * engine on every resolved address at connect time, direct delivery on every MX address.
 * Each use has its own operator opt-in for private targets (WEBHOOK_ALLOW_PRIVATE_TARGETS,
 * SMTP_DIRECT_ALLOW_PRIVATE_TARGETS). Anything that is not an IP address is forbidden
 * (fail closed). Node's isIPv4/isIPv6 decide what is an address (strictly: no octal or short
 * IPv4 forms); ipaddr.js parses it and matches the ranges.
 */

type V4Range = [network: ipaddr.IPv4, prefix: number, name: string];
type V6Range = [network: ipaddr.IPv6, prefix: number, name: string];

const V4_RANGES: readonly V4Range[] = (
  [
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
  ] as const
).map(([network, prefix, name]) => [ipaddr.IPv4.parse(network), prefix, name]);

const V6_RANGES: readonly V6Range[] = (
  [
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
  ] as const
).map(([network, prefix, name]) => [ipaddr.IPv6.parse(network), prefix, name]);

/** IPv6 prefixes whose addresses carry an IPv4 address, and the bytes where it sits. */
const V4_CARRIERS: readonly [network: ipaddr.IPv6, prefix: number, v4At: number][] = (
  [
    ['::ffff:0:0', 96, 12], // IPv4-mapped
    ['::', 96, 12], // IPv4-compatible (deprecated)
    ['64:ff9b::', 96, 12], // NAT64
    ['2002::', 16, 2], // 6to4
  ] as const
).map(([network, prefix, v4At]) => [ipaddr.IPv6.parse(network), prefix, v4At]);

const v4RangeOf = (address: ipaddr.IPv4) => V4_RANGES.find(([network, prefix]) => address.match(network, prefix))?.[2] ?? null;

/** The IPv4 address an IPv6 address stands for (mapped, compatible, NAT64, 6to4), if any. */
function embeddedV4(address: ipaddr.IPv6): ipaddr.IPv4 | null {
  const carrier = V4_CARRIERS.find(([network, prefix]) => address.match(network, prefix));
  if (!carrier) return null;
  const at = carrier[2];
  return new ipaddr.IPv4(address.toByteArray().slice(at, at + 4));
}

/**
 * The name of the forbidden range `ip` falls in (`loopback`, `private`, `cgnat`, `link-local`,
 * `metadata`, `unspecified`, `multicast`, `unique-local`, `site-local`, `reserved`, `documentation`,
 * `invalid`), or null for an address Herald may reach. Accepts `[v6]` brackets and zone ids.
 */
export function forbiddenRangeOf(ip: string): string | null {
  const address = ip.replace(/^\[(.*)\]$/, '$1').replace(/%.*$/, '');
  if (isIPv4(address)) return v4RangeOf(ipaddr.IPv4.parse(address));
  if (!isIPv6(address)) return 'invalid';
  const v6 = ipaddr.IPv6.parse(address);
  const own = V6_RANGES.find(([network, prefix]) => v6.match(network, prefix));
  if (own) return own[2];
  const v4 = embeddedV4(v6);
  return v4 ? v4RangeOf(v4) : null;
}

/** True when Herald must not connect to `ip` (see forbiddenRangeOf). */
export function isForbiddenAddress(ip: string): boolean {
  return forbiddenRangeOf(ip) !== null;
}
