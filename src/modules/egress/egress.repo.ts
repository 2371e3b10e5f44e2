import type { MikroORM } from '@mikro-orm/postgresql';
import { Domain } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';

/**
 * The pool a domain picked, and the per-address daily counters (egress_address_days). The
 * counters are not tenant rows: source addresses are the operator's, shared by every
 * workspace whose mail leaves from them.
 */
export function createEgressRepo(orm: MikroORM) {
  const db = () => orm.em.getConnection();
  return {
    /** The `ip_pool` of the workspace's sending domain `domain` (null: none, or no such domain). */
    async domainPool(orgId: string, domain: string): Promise<string | null> {
      const row = await scopeToOrg(orm.em, orgId).findOne(Domain, { domain }, { fields: ['ipPool'] });
      return row?.ipPool ?? null;
    },

    /** The first UTC day the address carried mail, or null when it never did. */
    async firstDay(address: string): Promise<string | null> {
      const rows = await db().execute<{ first: string | null }[]>(`select min(day) as first from egress_address_days where address = ?`, [
        address,
      ]);
      return rows[0]?.first ?? null;
    },

    /**
     * Counts `count` messages for the address on `day` when they fit under `cap` (null: no cap),
     * atomically (concurrent workers never oversell a day). Whether they were counted.
     */
    async reserve(address: string, day: string, count: number, cap: number | null): Promise<boolean> {
      if (cap !== null && count > cap) return false;
      const rows = await db().execute<{ sent: number }[]>(
        `insert into egress_address_days (address, day, sent) values (?, ?, ?)
         on conflict (address, day) do update set sent = egress_address_days.sent + excluded.sent
         where ?::int is null or egress_address_days.sent + excluded.sent <= ?::int
         returning sent`,
        [address, day, count, cap, cap],
      );
      return rows.length > 0;
    },

    /** Gives back what `reserve` counted for messages that never left (no connection was made). */
    async release(address: string, day: string, count: number): Promise<void> {
      await db().execute(
        `update egress_address_days set sent = greatest(0, sent - ?) where address = ? and day = ?`,
        [count, address, day],
        'run',
      );
    },
  };
}

export type EgressRepo = ReturnType<typeof createEgressRepo>;
