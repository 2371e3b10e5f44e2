import type { EgressSettings } from '../../settings/egress-pools.ts';

/** The stream of a send until message streams land: the one every send belongs to by default. */
export const DEFAULT_STREAM = 'transactional';

/**
 * The one place a delivery's egress pool is chosen: the domain's own pool (`ip_pool`), else the
 * pool EGRESS_STREAM_POOLS maps the stream to, else EGRESS_DEFAULT_POOL; null: no pool (the
 * host's default source address). A domain's pool wins over its stream's: a domain given
 * dedicated addresses sends all of its mail from them.
 */
export function poolFor(settings: EgressSettings, domain: { ipPool: string | null }, stream: string = DEFAULT_STREAM): string | null {
  if (domain.ipPool && settings.pools[domain.ipPool]) return domain.ipPool;
  return settings.streamPools[stream] ?? settings.defaultPool;
}

/** The next UTC midnight after `now`: when every address's daily count starts again. */
export function nextUtcMidnight(now: Date): Date {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
}
