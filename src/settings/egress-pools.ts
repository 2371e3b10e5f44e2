import { isIP } from 'node:net';

/**
 * Egress IP pools (docs/deliverability.md, "Egress IP pools"): named lists of this host's own
 * source addresses that deliveries bind to. They are the operator's, like the addresses, so
 * they live in the environment: `EGRESS_POOLS=bulk=192.0.2.10,192.0.2.11;tx=192.0.2.20`,
 * `EGRESS_DEFAULT_POOL=tx`, `EGRESS_STREAM_POOLS=broadcast=bulk`.
 */
export interface EgressSettings {
  /** Pool name → its source addresses, in the order deliveries take them. */
  pools: Record<string, string[]>;
  /** The pool of a domain without one (EGRESS_DEFAULT_POOL); null: the host's default route, no binding. */
  defaultPool: string | null;
  /** Stream name → pool (EGRESS_STREAM_POOLS), for domains without a pool of their own. */
  streamPools: Record<string, string>;
}

/** A pool or stream name: lower-case letters, digits, `-` and `_`, at most 63. */
export const POOL_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;

function pairs(text: string, what: string): [string, string][] | string {
  const entries = text
    .split(';')
    .map((entry) => entry.trim())
    .filter(Boolean);
  const found: [string, string][] = [];
  for (const entry of entries) {
    const at = entry.indexOf('=');
    if (at < 0) return `"${entry}" is not ${what}`;
    found.push([entry.slice(0, at).trim(), entry.slice(at + 1).trim()]);
  }
  return found;
}

/** EGRESS_POOLS (`name=addr,addr;name=addr`) as pools, or the problem found. */
export function parseEgressPools(text: string): Record<string, string[]> | string {
  const entries = pairs(text, 'name=address,address');
  if (typeof entries === 'string') return entries;
  const pools: Record<string, string[]> = {};
  for (const [name, list] of entries) {
    if (!POOL_NAME.test(name)) return `"${name}" is not a pool name (lower-case letters, digits, - and _; at most 63)`;
    if (pools[name]) return `pool "${name}" is defined twice`;
    const addresses = list
      .split(',')
      .map((address) => address.trim())
      .filter(Boolean);
    if (addresses.length === 0) return `pool "${name}" has no address`;
    for (const address of addresses) {
      if (isIP(address) === 0) return `pool "${name}": "${address}" is not an IPv4 or IPv6 address`;
    }
    if (new Set(addresses).size !== addresses.length) return `pool "${name}" lists an address twice`;
    pools[name] = addresses;
  }
  return pools;
}

/** EGRESS_STREAM_POOLS (`stream=pool;stream=pool`) as a map, or the problem found. */
export function parseStreamPools(text: string): Record<string, string> | string {
  const entries = pairs(text, 'stream=pool');
  if (typeof entries === 'string') return entries;
  const map: Record<string, string> = {};
  for (const [stream, pool] of entries) {
    if (!POOL_NAME.test(stream)) return `"${stream}" is not a stream name`;
    if (!POOL_NAME.test(pool)) return `"${pool}" is not a pool name`;
    if (map[stream]) return `stream "${stream}" is given twice`;
    map[stream] = pool;
  }
  return map;
}

/** The three settings checked against each other: every pool named must be defined. */
export function egressSettings(env: {
  EGRESS_POOLS: string;
  EGRESS_DEFAULT_POOL: string;
  EGRESS_STREAM_POOLS: string;
}): EgressSettings | string[] {
  const pools = parseEgressPools(env.EGRESS_POOLS);
  const streamPools = parseStreamPools(env.EGRESS_STREAM_POOLS);
  if (typeof pools === 'string') return [`EGRESS_POOLS: ${pools}`];
  if (typeof streamPools === 'string') return [`EGRESS_STREAM_POOLS: ${streamPools}`];
  const problems: string[] = [];
  const defaultPool = env.EGRESS_DEFAULT_POOL.trim() || null;
  if (defaultPool !== null && !pools[defaultPool]) problems.push(`EGRESS_DEFAULT_POOL: no pool "${defaultPool}" in EGRESS_POOLS`);
  for (const [stream, pool] of Object.entries(streamPools)) {
    if (!pools[pool]) problems.push(`EGRESS_STREAM_POOLS: stream "${stream}" names pool "${pool}", which EGRESS_POOLS does not define`);
  }
  return problems.length > 0 ? problems : { pools, defaultPool, streamPools };
}

/** Every address of every pool, once. */
export function egressAddresses(settings: EgressSettings): string[] {
  return [...new Set(Object.values(settings.pools).flat())];
}
