import { randomInt } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';

/**
 * A workspace's transactional credits live in CREDIT_SHARDS rows of `credit_shards` (balance
 * and overage used per shard); the balance is their sum. An acceptance charges one shard picked
 * at random, so up to CREDIT_SHARDS sends of one workspace commit side by side instead of
 * queueing on one row lock until each commit (measured: one row capped acceptance at ~55 % of
 * what the same machine does without it). When the picked shard is short, the acceptance runs
 * again consolidating: it locks every shard in shard order, charges the total and spreads what
 * is left evenly, so a workspace is refused (402) only when the sum is short, and overage is
 * charged only past the whole balance.
 */
export const CREDIT_SHARDS = 8;

/** The shard an acceptance charges first. */
export function pickCreditShard(): number {
  return randomInt(CREDIT_SHARDS);
}

export interface CreditTotals {
  balance: number;
  overageUsed: number;
}

/** Creates the workspace's missing shard rows (all of them for a new workspace); takes no lock on existing ones. */
export async function ensureCreditShards(em: EntityManager, orgId: string): Promise<void> {
  await em.execute(
    `insert into credit_shards (org_id, shard) select ?, g from generate_series(0, ${CREDIT_SHARDS - 1}) as g on conflict do nothing`,
    [orgId],
  );
}

/**
 * SQL for a shard's new balance when `rest` credits are spread over the `n` locked shards: the
 * shard at position `pos` (0-based, in shard order) gets rest / n, plus one for the first rest % n.
 */
export function spreadBalanceSql(rest: string, n: string, pos: string): string {
  return `${rest} / ${n} + case when ${pos} < ${rest} % ${n} then 1 else 0 end`;
}

/** Sets the workspace's balance to `amount`, spread over its shards (locked in shard order); overage used is kept. */
export async function setCreditBalance(em: EntityManager, orgId: string, amount: number): Promise<void> {
  await ensureCreditShards(em, orgId);
  await em.execute(
    `with v as (select ?::varchar as org, ?::int as amount),
          locked as (select s.shard from credit_shards s, v where s.org_id = v.org order by s.shard for update of s),
          placed as (select shard, row_number() over (order by shard) - 1 as pos, count(*) over () as n from locked)
     update credit_shards s set balance = ${spreadBalanceSql('v.amount', 'p.n', 'p.pos')}
       from placed p, v where s.org_id = v.org and s.shard = p.shard`,
    [orgId, amount],
  );
}

/** The workspace's balance and overage used (sums over its shards). */
export async function readCredits(em: EntityManager, orgId: string): Promise<CreditTotals> {
  return (await readCreditsOf(em, [orgId])).get(orgId) ?? { balance: 0, overageUsed: 0 };
}

/** Balance and overage used of each of `orgIds` that has shards, in one statement. */
export async function readCreditsOf(em: EntityManager, orgIds: readonly string[]): Promise<Map<string, CreditTotals>> {
  if (orgIds.length === 0) return new Map();
  const rows = await em.execute<{ org_id: string; balance: number; overage_used: number }[]>(
    'select org_id, sum(balance)::int as balance, sum(overage_used)::int as overage_used from credit_shards where org_id in (?) group by org_id',
    [[...orgIds]],
  );
  return new Map(rows.map((row) => [row.org_id, { balance: row.balance, overageUsed: row.overage_used }]));
}

/** Gives credits back to one shard: `fromBalance` to its balance, `overage` off its overage used. */
export async function releaseCredits(
  em: EntityManager,
  orgId: string,
  shard: number,
  charge: { fromBalance: number; overage: number },
): Promise<void> {
  if (charge.fromBalance === 0 && charge.overage === 0) return;
  await em.execute(
    `insert into credit_shards (org_id, shard, balance) values (?, ?, ?)
     on conflict (org_id, shard) do update set balance = credit_shards.balance + excluded.balance, overage_used = greatest(0, credit_shards.overage_used - ?)`,
    [orgId, shard, charge.fromBalance, charge.overage],
  );
}
