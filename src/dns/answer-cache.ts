import { LRUCache } from 'lru-cache';

/**
 * A small in-process cache in front of a DNS query function, for lookups that repeat in bursts
 * (the SPF, DKIM and DMARC records of a sender that mails many messages in a row). It keeps
 * answers and definite "no such record" results for a bounded time, never errors that mean
 * "DNS did not answer", and joins identical queries that are in flight. Node's resolver gives
 * no TTL for TXT records, so one ceiling applies to every answer: a record changed at its
 * origin is seen at most `ttlMs` later, as behind any caching resolver.
 */

/** Error codes that mean the name or record does not exist: cached like an answer. */
const DEFINITE_ABSENCE = new Set(['ENOTFOUND', 'ENODATA', 'NXDOMAIN']);

export interface DnsAnswerCacheOptions {
  /** How long an answer or a definite absence is reused (while at most this old); 0 turns the cache off. */
  ttlMs: number;
  /** Entries kept; the least recently used go first. */
  maxEntries: number;
  now?: () => number;
}

type Settled<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

export type DnsQuery<T> = (name: string, rrtype: string) => Promise<T>;

/** Rebuilds a cached absence as a fresh error with the same code, as the resolver threw it. */
function absence(settled: { code: string; message: string }): Error {
  return Object.assign(new Error(settled.message), { code: settled.code });
}

export function cacheDnsAnswers<T>(query: DnsQuery<T>, options: DnsAnswerCacheOptions): DnsQuery<T> {
  if (options.ttlMs <= 0) return query;
  const entries = new LRUCache<string, Settled<T>>({
    max: options.maxEntries,
    ttl: options.ttlMs,
    // Read the clock on every check (no timer-cached time): an answer is reused while at most ttlMs old.
    ttlResolution: 0,
    ...(options.now ? { perf: { now: options.now } } : {}),
  });
  const inFlight = new Map<string, Promise<T>>();
  const remember = (key: string, settled: Settled<T>) => entries.set(key, settled);

  return async (name, rrtype) => {
    const key = `${rrtype.toUpperCase()} ${name.toLowerCase().replace(/\.$/, '')}`;
    // A live entry (an expired one reads as absent); reading it makes it the most recently used.
    const settled = entries.get(key);
    if (settled) {
      if (settled.ok) return settled.value;
      throw absence(settled);
    }
    const pending = inFlight.get(key);
    if (pending) return pending;
    const lookup = query(name, rrtype).then(
      (value) => {
        remember(key, { ok: true, value });
        return value;
      },
      (error: unknown) => {
        const code = (error as NodeJS.ErrnoException | undefined)?.code;
        if (code && DEFINITE_ABSENCE.has(code)) remember(key, { ok: false, code, message: (error as Error).message });
        throw error;
      },
    );
    inFlight.set(key, lookup);
    try {
      return await lookup;
    } finally {
      inFlight.delete(key);
    }
  };
}
