import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKey, Organization } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';
import { apiKeyMatchesDigest, parseApiKey } from './api-key.fns.ts';
import type { KeyContext, RateLimitProfile } from './key-context.ts';
import { LRUCache } from 'lru-cache';

export interface RateLimitDefaults {
  requestsPerMinute: number;
  burst: number;
}

export const DEFAULT_RATE_LIMIT: RateLimitDefaults = { requestsPerMinute: 300, burst: 100 };

export interface AuthenticatorOptions {
  orm: MikroORM;
  /** How long a key lookup is reused; bounds how long a revoked key keeps working. */
  cacheTtlMs?: number;
  rateLimitDefaults?: RateLimitDefaults;
  now?: () => number;
}

interface CachedKey {
  /** The stored SHA-256 digest of the key, decoded once per lookup (empty for an unknown key). */
  secretDigest: Buffer;
  context: KeyContext | null;
  /** When the key itself expires (epoch ms); null when it does not. */
  keyExpiresAt: number | null;
  /** When the lookup that made this entry started (its reading of the database cannot be older). */
  readAt: number;
}

const LAST_USED_RESOLUTION_MS = 60_000;
/** An entry past this share of the cache's lifetime is reloaded in the background while still used. */
const REFRESH_AT_SHARE = 0.8;
const MAX_CACHED_KEYS = 10_000;

const digestOf = (secretHash: string) => Buffer.from(secretHash, 'hex');

export function resolveRateLimit(
  key: Pick<ApiKey, 'rateLimitPerMinute' | 'rateLimitBurst'>,
  org: Pick<Organization, 'rateLimitPerMinute' | 'rateLimitBurst'>,
  defaults: RateLimitDefaults,
): RateLimitProfile {
  if (key.rateLimitPerMinute != null) {
    return {
      requests_per_minute: key.rateLimitPerMinute,
      burst: key.rateLimitBurst ?? org.rateLimitBurst ?? defaults.burst,
      source: 'key',
    };
  }
  if (org.rateLimitPerMinute != null) {
    return {
      requests_per_minute: org.rateLimitPerMinute,
      burst: org.rateLimitBurst ?? defaults.burst,
      source: 'workspace',
    };
  }
  return { requests_per_minute: defaults.requestsPerMinute, burst: defaults.burst, source: 'default' };
}

/**
 * Resolves a bearer key to its KeyContext: lookup by prefix, SHA-256 compare in constant
 * time, revoked keys refused. Lookups are cached per prefix for `cacheTtlMs` (default 5 s),
 * counted from the moment the lookup read the database, so a revocation is honoured within it.
 *
 * One lookup per prefix at a time: the requests that miss the cache while it runs wait for it
 * instead of each reading the key again. And a key in use is read again in the background once
 * its entry is 80 % through its life, so under traffic its entry is replaced before it expires
 * and no request waits for the lookup: before this, every 5 s each of the requests in flight on a
 * busy key (50 in the api-read benchmark) missed the cache together and read the key and its
 * workspace themselves, two statements each behind the pool's queue, and that burst was the
 * reads' p99 (BENCHMARKS.md, 2026-11-28 14:13).
 */
export function createAuthenticator(options: AuthenticatorOptions) {
  const ttl = options.cacheTtlMs ?? 5_000;
  const defaults = options.rateLimitDefaults ?? DEFAULT_RATE_LIMIT;
  const now = options.now ?? Date.now;
  // A revocation is honoured within `ttl`: an entry is reused while at most that old.
  const cache = new LRUCache<string, CachedKey>({ max: MAX_CACHED_KEYS, ttl, ttlResolution: 0, perf: { now } });
  const lastUsedWrites = new Map<string, number>();
  /** The lookup running for each prefix. */
  const loading = new Map<string, Promise<CachedKey>>();

  async function load(prefix: string, readAt: number): Promise<CachedKey> {
    const em = options.orm.em.fork();
    const key = await em.findOne(ApiKey, { prefix }, ALL_TENANTS);
    if (!key || key.revokedAt || key.audience !== 'public_api') {
      return { secretDigest: digestOf(key?.secretHash ?? ''), context: null, keyExpiresAt: null, readAt };
    }
    const org = await em.findOne(Organization, { id: key.orgId });
    if (!org) return { secretDigest: digestOf(key.secretHash), context: null, keyExpiresAt: null, readAt };
    return {
      readAt,
      keyExpiresAt: key.expiresAt?.getTime() ?? null,
      secretDigest: digestOf(key.secretHash),
      context: {
        orgId: org.id,
        orgSlug: org.slug,
        orgName: org.name,
        actorUserId: key.userId,
        keyId: key.id,
        keyMode: key.mode,
        authMethod: 'api_key',
        scopes: [...key.scopes],
        rateLimit: resolveRateLimit(key, org, defaults),
      },
    };
  }

  /** The running lookup of `prefix`, or a new one; its entry is cached for what is left of `ttl`. */
  function lookup(prefix: string): Promise<CachedKey> {
    let running = loading.get(prefix);
    if (!running) {
      const readAt = now();
      running = load(prefix, readAt)
        .then((entry) => {
          const left = ttl - (now() - readAt);
          if (ttl === 0 || left > 0) cache.set(prefix, entry, ttl === 0 ? {} : { ttl: left });
          return entry;
        })
        .finally(() => loading.delete(prefix));
      loading.set(prefix, running);
    }
    return running;
  }

  async function touch(keyId: string): Promise<void> {
    const last = lastUsedWrites.get(keyId) ?? 0;
    if (now() - last < LAST_USED_RESOLUTION_MS) return;
    lastUsedWrites.set(keyId, now());
    await options.orm.em.fork().nativeUpdate(ApiKey, { id: keyId }, { lastUsedAt: new Date(now()) }, ALL_TENANTS);
  }

  return {
    /** The caller's context, or null for a malformed, unknown or revoked key. */
    async authenticate(presented: string): Promise<KeyContext | null> {
      const parsed = parseApiKey(presented);
      if (!parsed) return null;
      let entry = cache.get(parsed.prefix);
      const age = entry ? now() - entry.readAt : 0;
      if (!entry || (ttl > 0 && age >= ttl)) entry = await lookup(parsed.prefix);
      else if (ttl > 0 && age >= ttl * REFRESH_AT_SHARE && !loading.has(parsed.prefix)) {
        // A failed refresh leaves the entry to its expiry; the next lookup then fails in a request.
        lookup(parsed.prefix).catch(() => {});
      }
      if (!entry.context || !apiKeyMatchesDigest(presented, entry.secretDigest)) return null;
      if (entry.keyExpiresAt !== null && entry.keyExpiresAt <= now()) return null;
      if (entry.context.keyId) await touch(entry.context.keyId);
      return entry.context;
    },
  };
}

export type Authenticator = ReturnType<typeof createAuthenticator>;
