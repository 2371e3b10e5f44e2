import type { MxRecord } from 'node:dns';
import { Resolver } from 'node:dns/promises';
import { cacheDnsAnswers, type DnsAnswerCacheOptions, type DnsQuery } from './answer-cache.ts';
import type { Config } from '../config.ts';

/** A DNS answer: records found, a definite "none" (NXDOMAIN or no data), or no answer at all. */
export type DnsLookup<T> = { status: 'found'; records: T[] } | { status: 'none' } | { status: 'unreachable'; error: string };

const DEFINITELY_NONE = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN']);

async function lookup<T>(query: () => Promise<T[]>): Promise<DnsLookup<T>> {
  try {
    const records = await query();
    return records.length > 0 ? { status: 'found', records } : { status: 'none' };
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'EUNKNOWN';
    if (DEFINITELY_NONE.has(code)) return { status: 'none' };
    return { status: 'unreachable', error: code };
  }
}

/** Node's resolver on DNS_SERVERS (else the system's) with DNS_TIMEOUT_MS and one retry. */
export function configuredResolver(config: { dns: Pick<Config['dns'], 'servers' | 'timeoutMs'> }): Resolver {
  const resolver = new Resolver({ timeout: config.dns.timeoutMs, tries: 2 });
  if (config.dns.servers.length > 0) resolver.setServers(config.dns.servers);
  return resolver;
}

/**
 * DNS lookups through the configured servers (DNS_SERVERS, else the system's) with a short
 * timeout and one retry, telling "the domain has no such record" apart from "DNS did not
 * answer", so callers can decide what an outage means.
 */
export function createDnsResolver(
  config: { dns: Pick<Config['dns'], 'servers' | 'timeoutMs'> },
  options: { cache?: Omit<DnsAnswerCacheOptions, 'now'> } = {},
) {
  const resolver = configuredResolver(config);
  const plain: DnsQuery<unknown> = (name, rrtype) => resolver.resolve(name, rrtype as 'A');
  // With `cache`, answers (and definite absences) are reused for a while: bursts of lookups of one domain cost one query.
  const query = options.cache ? cacheDnsAnswers(plain, options.cache) : plain;
  const ask = <T>(name: string, rrtype: string) => query(name, rrtype) as Promise<T[]>;
  return {
    mx: (name: string) => lookup(() => ask<MxRecord>(name, 'MX')),
    a: (name: string) => lookup(() => ask<string>(name, 'A')),
    aaaa: (name: string) => lookup(() => ask<string>(name, 'AAAA')),
    /** TXT records, each joined from its character strings. */
    txt: (name: string) => lookup(async () => (await ask<string[]>(name, 'TXT')).map((chunks) => chunks.join(''))),
    cname: (name: string) => lookup(() => ask<string>(name, 'CNAME')),

    /**
     * Whether mail can be delivered to the domain: an MX, or else an A/AAAA (RFC 5321 implicit
     * MX). A null MX (`MX 0 .`, RFC 7505) means the domain accepts no mail.
     */
    async mailServer(domain: string): Promise<'yes' | 'no' | 'unknown'> {
      const mx = await this.mx(domain);
      if (mx.status === 'found') {
        const nullMx = mx.records.length === 1 && ['', '.'].includes(mx.records[0]!.exchange);
        return nullMx ? 'no' : 'yes';
      }
      if (mx.status === 'unreachable') return 'unknown';
      const [a, aaaa] = await Promise.all([this.a(domain), this.aaaa(domain)]);
      if (a.status === 'found' || aaaa.status === 'found') return 'yes';
      if (a.status === 'unreachable' || aaaa.status === 'unreachable') return 'unknown';
      return 'no';
    },
  };
}

export type DnsResolver = ReturnType<typeof createDnsResolver>;
