import type { MikroORM } from '@mikro-orm/postgresql';
import type { EgressSettings } from '../../settings/egress-pools.ts';
import type { Relay, RelayResult } from '../outbound/relay.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { addressDailyCap, ADDRESS_WARMUP_PLAN, warmupDay } from './address-warmup-plan.ts';
import { createEgressRepo } from './egress.repo.ts';
import { DEFAULT_STREAM, nextUtcMidnight, poolFor } from './egress.fns.ts';

/**
 * Where one delivery leaves from: the host's default route (no pool), one address of its pool
 * (its messages counted against that address's day), or nowhere today: every address of the
 * pool used up its warm-up cap, so the message waits until `until` (deferred, not failed).
 */
export type EgressChoice =
  | { kind: 'default' }
  | { kind: 'address'; pool: string; address: string; day: string; count: number }
  | { kind: 'held'; pool: string; until: Date; reason: string };

export interface EgressDeps {
  orm: MikroORM;
  settings: EgressSettings;
  /** A relay whose connections all leave from `localAddress` (nodemailer's localAddress). */
  relayFrom: (localAddress: string) => Relay;
  /** Messages per day by warm-up day (address-warmup-plan.ts). */
  plan?: readonly number[];
  now?: () => Date;
}

/** How long a domain's pool is reused before it is read again (a change on the dashboard takes effect within it). */
const DOMAIN_POOL_TTL_MS = 15_000;

/**
 * Egress IP pools for the worker's deliveries: picks each delivery's source address, taking the
 * pool's addresses in turn and skipping one whose warm-up cap for the UTC day is used up, and
 * sends through one relay per source address (so pooled connections never mix addresses).
 */
export function createEgress(deps: EgressDeps) {
  const repo = createEgressRepo(deps.orm);
  const now = deps.now ?? (() => new Date());
  const plan = deps.plan ?? ADDRESS_WARMUP_PLAN;
  const turns = new Map<string, number>();
  const firstDays = new Map<string, string>();
  const domainPools = new Map<string, { pool: string | null; until: number }>();
  const relays = new Map<string, Relay>();

  async function domainPool(orgId: string, domain: string): Promise<string | null> {
    const key = `${orgId}|${domain}`;
    const cached = domainPools.get(key);
    if (cached && cached.until > Date.now()) return cached.pool;
    const pool = await repo.domainPool(orgId, domain);
    domainPools.set(key, { pool, until: Date.now() + DOMAIN_POOL_TTL_MS });
    return pool;
  }

  async function capOf(address: string, today: string): Promise<number | null> {
    let first = firstDays.get(address);
    if (!first) {
      first = (await repo.firstDay(address)) ?? today;
      firstDays.set(address, first);
    }
    return addressDailyCap(warmupDay(first, today), plan);
  }

  function relayFor(address: string): Relay {
    let relay = relays.get(address);
    if (!relay) {
      relay = deps.relayFrom(address);
      relays.set(address, relay);
    }
    return relay;
  }

  return {
    /** Whether any pool is configured (no pools: every delivery takes the default route, nothing is counted). */
    enabled: Object.keys(deps.settings.pools).length > 0,

    /**
     * The source of a delivery of `count` recipients for the workspace's domain on `stream`:
     * the pool's next address with room today, counted at once.
     */
    async choose(orgId: string, domain: string, count: number, stream: string = DEFAULT_STREAM): Promise<EgressChoice> {
      const pool = poolFor(deps.settings, { ipPool: await domainPool(orgId, domain) }, stream);
      const addresses = pool ? deps.settings.pools[pool] : undefined;
      if (!pool || !addresses) return { kind: 'default' };
      const at = now();
      const today = utcDay(at);
      const start = turns.get(pool) ?? 0;
      turns.set(pool, (start + 1) % addresses.length);
      for (let i = 0; i < addresses.length; i += 1) {
        const address = addresses[(start + i) % addresses.length]!;
        const cap = await capOf(address, today);
        // A message to more recipients than a day-1 cap counts as a full day rather than never leaving.
        const counted = cap === null ? count : Math.min(count, cap);
        if (await repo.reserve(address, today, counted, cap)) return { kind: 'address', pool, address, day: today, count: counted };
      }
      return {
        kind: 'held',
        pool,
        until: nextUtcMidnight(at),
        reason: `every address of egress pool "${pool}" reached its warm-up cap for ${today}; waiting for the next UTC day`,
      };
    },

    /** Sends from the chosen address; a delivery that never reached a server gives its count back. */
    async send(
      choice: Extract<EgressChoice, { kind: 'address' }>,
      message: Parameters<Relay['send']>[0],
      envelope: Parameters<Relay['send']>[1],
    ): Promise<RelayResult> {
      const result = await relayFor(choice.address).send(message, envelope);
      if (result.kind === 'unreachable') await repo.release(choice.address, choice.day, choice.count);
      return result;
    },

    close(): void {
      for (const relay of relays.values()) relay.close();
      relays.clear();
    },
  };
}

export type Egress = ReturnType<typeof createEgress>;
