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
  /** How long an answer or a definite absence is reused; 0 turns the cache off. */
  ttlMs: number;
  /** Entries kept; the least recently used go first. */
  maxEntries: number;
  now?: () => number;
}

type Settled<T> = { ok: true; value: T } | { ok: false; code: string; message: string };

interface Entry<T> {
  settled: Settled<T>;
  expiresAt: number;
}

export type DnsQuery<T> = (name: string, rrtype: string) => Promise<T>;

/** Rebuilds a cached absence as a fresh error with the same code, as the resolver threw it. */
function absence(settled: { code: string; message: string }): Error {
  return Object.assign(new Error(settled.message), { code: settled.code });
}

export function cacheDnsAnswers<T>(query: DnsQuery<T>, options: DnsAnswerCacheOptions): DnsQuery<T> {
  if (options.ttlMs <= 0) return query;
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry<T>>();
  const inFlight = new Map<string, Promise<T>>();

  function remember(key: string, settled: Settled<T>): void {
    entries.delete(key);
    entries.set(key, { settled, expiresAt: now() + options.ttlMs });
    while (entries.size > options.maxEntries) entries.delete(entries.keys().next().value as string);
  }

  return async (name, rrtype) => {
    const key = `${rrtype.toUpperCase()} ${name.toLowerCase().replace(/\.$/, '')}`;
    const entry = entries.get(key);
    if (entry && entry.expiresAt > now()) {
      // Most recently used goes last.
      entries.delete(key);
      entries.set(key, entry);
      if (entry.settled.ok) return entry.settled.value;
      throw absence(entry.settled);
    }
    if (entry) entries.delete(key);
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
