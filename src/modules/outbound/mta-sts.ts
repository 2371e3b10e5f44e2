import { request } from 'node:https';
import { isIP } from 'node:net';
import type { DnsResolver } from '../../dns/resolver.ts';
import type { Logger } from '../../logger.ts';
import { forbiddenRangeOf } from '../../net/address-policy.ts';
import { LRUCache } from 'lru-cache';

/**
 * MTA-STS (RFC 8461) for direct delivery: a domain that publishes `_mta-sts.<domain>` TXT
 * `v=STSv1; id=…` serves its policy at `https://mta-sts.<domain>/.well-known/mta-sts.txt`. In
 * `enforce` mode only the MX hosts the policy names may receive its mail, and only over TLS
 * with a certificate valid for the host name; `testing` and `none` change nothing (Herald logs
 * what enforcement would have refused).
 */

export interface MtaStsPolicy {
  mode: 'enforce' | 'testing' | 'none';
  /** MX host patterns: `mail.example.com` or `*.example.com` (one leftmost label). */
  mx: string[];
  maxAgeSeconds: number;
}

/** What applies to a domain's delivery now. */
export type MtaStsVerdict = { kind: 'none' } | { kind: 'policy'; policy: MtaStsPolicy };

/** Policies are at most this large (RFC 8461 §3.2 suggests 64 KiB). */
const POLICY_MAX_BYTES = 64 * 1024;
const FETCH_TIMEOUT_MS = 10_000;
/** A policy's max_age is capped at a year (RFC 8461 §3.2). */
const MAX_AGE_CAP_SECONDS = 31_557_600;
const CACHE_MAX = 10_000;

/** Parses a policy file; a string says why it is not one. */
export function parseMtaStsPolicy(text: string): MtaStsPolicy | string {
  const fields = new Map<string, string[]>();
  for (const line of text.split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const key = line.slice(0, colon).trim().toLowerCase();
    fields.set(key, [...(fields.get(key) ?? []), line.slice(colon + 1).trim()]);
  }
  if (fields.get('version')?.[0] !== 'STSv1') return 'version is not STSv1';
  const mode = fields.get('mode')?.[0];
  if (mode !== 'enforce' && mode !== 'testing' && mode !== 'none') return 'mode must be enforce, testing or none';
  const maxAge = Number(fields.get('max_age')?.[0] ?? 'x');
  if (!Number.isInteger(maxAge) || maxAge < 0) return 'max_age must be a whole number of seconds';
  const mx = (fields.get('mx') ?? []).map((pattern) => pattern.toLowerCase().replace(/\.$/, ''));
  if (mode !== 'none' && mx.length === 0) return 'an enforce or testing policy must list mx hosts';
  return { mode, mx, maxAgeSeconds: Math.min(maxAge, MAX_AGE_CAP_SECONDS) };
}

/** Whether an MX host name matches a policy pattern (`*.example.com` matches exactly one more label). */
export function mxMatches(pattern: string, host: string): boolean {
  const name = host.toLowerCase().replace(/\.$/, '');
  if (!pattern.startsWith('*.')) return name === pattern;
  const suffix = pattern.slice(1);
  return name.endsWith(suffix) && !name.slice(0, -suffix.length).includes('.') && name.length > suffix.length;
}

export interface MtaStsOptions {
  dns: Pick<DnsResolver, 'txt' | 'a' | 'aaaa'>;
  logger: Logger;
  /** The trusted certificate authorities (PEM); Node's public roots when absent. */
  ca?: string[];
  /** The HTTPS port of policy hosts (443; another only in tests). */
  port?: number;
  /** SMTP_DIRECT_ALLOW_PRIVATE_TARGETS: policy hosts in the address policy's forbidden ranges are fetched too. */
  allowPrivateTargets: boolean;
  now?: () => number;
}

/**
 * The policy host's address, through Herald's resolver (the same DNS the MX lookups use): its
 * first IPv4, else IPv6 address the address policy allows (any, with allowPrivateTargets).
 */
async function addressOf(options: MtaStsOptions, host: string): Promise<string> {
  const [a, aaaa] = await Promise.all([options.dns.a(host), options.dns.aaaa(host)]);
  const addresses = [...(a.status === 'found' ? a.records : []), ...(aaaa.status === 'found' ? aaaa.records : [])];
  if (addresses.length === 0) throw new Error(`${host} has no address`);
  const reachable = options.allowPrivateTargets ? addresses : addresses.filter((address) => forbiddenRangeOf(address) === null);
  if (reachable.length === 0) {
    throw new Error(
      `${host} has only addresses Herald does not connect to: ${addresses.map((address) => `${address} (${forbiddenRangeOf(address)})`).join(', ')}`,
    );
  }
  return reachable[0]!;
}

/** The policy file of `domain` from its policy host over verified HTTPS (no redirects, a 200 only, at most POLICY_MAX_BYTES). */
async function fetchPolicy(options: MtaStsOptions, domain: string): Promise<string> {
  const host = `mta-sts.${domain}`;
  const address = await addressOf(options, host);
  return new Promise<string>((resolve, reject) => {
    const req = request(
      {
        host: address,
        servername: host,
        port: options.port ?? 443,
        path: '/.well-known/mta-sts.txt',
        method: 'GET',
        headers: { host, 'user-agent': 'Herald MTA-STS' },
        ...(options.ca ? { ca: options.ca } : {}),
        rejectUnauthorized: true,
        timeout: FETCH_TIMEOUT_MS,
      },
      (res) => {
        // RFC 8461 §3.3: no redirects; a 200 answer only.
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`${host} answered HTTP ${res.statusCode}`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > POLICY_MAX_BYTES) {
            req.destroy(new Error(`the policy of ${domain} is over ${POLICY_MAX_BYTES} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${host} did not answer within ${FETCH_TIMEOUT_MS} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Finds the MTA-STS policy of a destination domain, with a cache that follows RFC 8461 §5.1:
 * a policy is reused until its max_age, refreshed when the TXT record's id changes, and a
 * policy that cannot be fetched leaves the cached one in force (or none, when there is none).
 */
export function createMtaSts(options: MtaStsOptions) {
  const now = options.now ?? Date.now;
  // Each policy lives for its own max_age (a per-entry TTL); the least recently used go past CACHE_MAX.
  const cache = new LRUCache<string, { id: string; policy: MtaStsPolicy }>({ max: CACHE_MAX, ttlResolution: 0, perf: { now } });

  return {
    async policyFor(domain: string): Promise<MtaStsVerdict> {
      if (isIP(domain)) return { kind: 'none' };
      const fresh = cache.get(domain);
      const txt = await options.dns.txt(`_mta-sts.${domain}`);
      const record = txt.status === 'found' ? txt.records.find((value) => /^v=STSv1\s*;/i.test(value.trim())) : undefined;
      const id = record ? /(?:^|;)\s*id=([A-Za-z0-9]{1,32})\s*(?:;|$)/.exec(record)?.[1] : undefined;
      if (!id) return fresh ? { kind: 'policy', policy: fresh.policy } : { kind: 'none' };
      if (fresh && fresh.id === id) return { kind: 'policy', policy: fresh.policy };
      let parsed: MtaStsPolicy | string;
      try {
        parsed = parseMtaStsPolicy(await fetchPolicy(options, domain));
      } catch (error) {
        options.logger.warn('MTA-STS policy could not be fetched; the cached one (or none) applies', {
          domain,
          error: (error as Error).message,
        });
        return fresh ? { kind: 'policy', policy: fresh.policy } : { kind: 'none' };
      }
      if (typeof parsed === 'string') {
        options.logger.warn('MTA-STS policy is not valid; the cached one (or none) applies', { domain, problem: parsed });
        return fresh ? { kind: 'policy', policy: fresh.policy } : { kind: 'none' };
      }
      cache.set(domain, { id, policy: parsed }, { ttl: parsed.maxAgeSeconds * 1000 });
      return { kind: 'policy', policy: parsed };
    },
  };
}

export type MtaSts = ReturnType<typeof createMtaSts>;
