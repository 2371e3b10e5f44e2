import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cacheDnsAnswers } from '../../src/dns/answer-cache.ts';
import { createAuthResolver } from '../../src/modules/inbound/auth-results.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';

/** Queries to the test server over UDP, as mailauth's resolver makes them. */
function realQuery(server: TestDnsServer, timeoutMs = 300) {
  const resolver = new Resolver({ timeout: timeoutMs, tries: 1 });
  resolver.setServers([server.address]);
  return (name: string, rrtype: string) => resolver.resolve(name, rrtype) as Promise<string[][] | string[]>;
}

function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  return promise.then(
    () => undefined,
    (error: unknown) => (error as NodeJS.ErrnoException).code,
  );
}

describe('DNS answer cache (inbound authentication)', () => {
  let dns: TestDnsServer;

  beforeAll(async () => {
    dns = await startDnsServer();
  });
  afterAll(async () => {
    await dns.close();
  });

  it('asks once for a repeated TXT lookup and keeps the answer while the record changes at its origin', async () => {
    dns.set('spf.cache.test', { TXT: ['v=spf1 -all'] });
    const resolve = createAuthResolver({ dns: { servers: [dns.address], timeoutMs: 500, cacheTtlMs: 60_000 } });
    expect(await resolve('spf.cache.test', 'TXT')).toEqual([['v=spf1 -all']]);
    dns.set('spf.cache.test', { TXT: ['v=spf1 +all'] });
    expect(await resolve('SPF.Cache.Test.', 'TXT')).toEqual([['v=spf1 -all']]);
    expect(dns.queries('TXT', 'spf.cache.test')).toBe(1);
  });

  it('caches a definite absence and throws it again with the same code', async () => {
    const resolve = createAuthResolver({ dns: { servers: [dns.address], timeoutMs: 500, cacheTtlMs: 60_000 } });
    expect(await codeOf(resolve('_dmarc.absent.cache.test', 'TXT'))).toBe('ENOTFOUND');
    expect(await codeOf(resolve('_dmarc.absent.cache.test', 'TXT'))).toBe('ENOTFOUND');
    expect(dns.queries('TXT', '_dmarc.absent.cache.test')).toBe(1);
  });

  it('joins identical lookups in flight into one question', async () => {
    dns.set('burst.cache.test', { TXT: ['v=DMARC1; p=none'] });
    const resolve = cacheDnsAnswers(realQuery(dns), { ttlMs: 60_000, maxEntries: 100 });
    const answers = await Promise.all(Array.from({ length: 8 }, () => resolve('burst.cache.test', 'TXT')));
    expect(answers.every((answer) => JSON.stringify(answer) === JSON.stringify([['v=DMARC1; p=none']]))).toBe(true);
    expect(dns.queries('TXT', 'burst.cache.test')).toBe(1);
  });

  it('never keeps "DNS did not answer": the next lookup asks again', async () => {
    dns.set('outage.cache.test', { TXT: ['v=spf1 a -all'] });
    const resolve = cacheDnsAnswers(realQuery(dns, 200), { ttlMs: 60_000, maxEntries: 100 });
    dns.setSilent(true);
    try {
      expect(await codeOf(resolve('outage.cache.test', 'TXT'))).toBe('ETIMEOUT');
    } finally {
      dns.setSilent(false);
    }
    expect(await resolve('outage.cache.test', 'TXT')).toEqual([['v=spf1 a -all']]);
  });

  it('asks again once the answer is older than the TTL', async () => {
    let now = 1_000_000;
    dns.set('ttl.cache.test', { TXT: ['first'] });
    const resolve = cacheDnsAnswers(realQuery(dns), { ttlMs: 60_000, maxEntries: 100, now: () => now });
    expect(await resolve('ttl.cache.test', 'TXT')).toEqual([['first']]);
    dns.set('ttl.cache.test', { TXT: ['second'] });
    now += 60_000;
    expect(await resolve('ttl.cache.test', 'TXT')).toEqual([['first']]);
    now += 1;
    expect(await resolve('ttl.cache.test', 'TXT')).toEqual([['second']]);
    expect(dns.queries('TXT', 'ttl.cache.test')).toBe(2);
  });

  it('keeps at most maxEntries answers, dropping the least recently used', async () => {
    for (const name of ['a.lru.cache.test', 'b.lru.cache.test', 'c.lru.cache.test']) dns.set(name, { TXT: [name] });
    const resolve = cacheDnsAnswers(realQuery(dns), { ttlMs: 60_000, maxEntries: 2 });
    await resolve('a.lru.cache.test', 'TXT');
    await resolve('b.lru.cache.test', 'TXT');
    await resolve('a.lru.cache.test', 'TXT'); // a is now the most recently used
    await resolve('c.lru.cache.test', 'TXT'); // evicts b
    await resolve('a.lru.cache.test', 'TXT');
    await resolve('b.lru.cache.test', 'TXT');
    expect(dns.queries('TXT', 'a.lru.cache.test')).toBe(1);
    expect(dns.queries('TXT', 'b.lru.cache.test')).toBe(2);
  });

  it('with a TTL of 0 asks every time (DNS_CACHE_TTL_SECONDS=0)', async () => {
    dns.set('off.cache.test', { TXT: ['v=spf1 -all'] });
    const resolve = createAuthResolver({ dns: { servers: [dns.address], timeoutMs: 500, cacheTtlMs: 0 } });
    await resolve('off.cache.test', 'TXT');
    await resolve('off.cache.test', 'TXT');
    expect(dns.queries('TXT', 'off.cache.test')).toBe(2);
  });
});
