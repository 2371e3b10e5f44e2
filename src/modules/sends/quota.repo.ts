import type { EntityManager } from '@mikro-orm/postgresql';
import type { TransactionalEmail } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { secondsUntilNextUtcDay } from './sends.fns.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import { refundRunCredits } from '../automations/automation-stats.repo.ts';
import { pickCreditShard, releaseCredits, spreadBalanceSql } from '../orgs/credits.repo.ts';

/**
 * Credits and the domain warm-up cap, reserved at acceptance and released on a 502, a
 * permanent failure before hand-off, or a cancel. The reservation runs inside the acceptance
 * transaction, so a refused send (402, 429) or a rollback leaves no reservation behind; row
 * locks make concurrent sends queue instead of overselling, on one of the workspace's credit
 * shards (src/modules/orgs/credits.repo.ts) and one warm-up counter shard rather than on one row.
 */

export interface CreditCharge {
  fromBalance: number;
  overage: number;
  /** Whether the domain's drain lease is held (read in the same statement): a running drain needs no wake-up. */
  domainDraining: boolean;
}

/**
 * How the reservation takes credits: `shard` charges the request's shard alone and gives up
 * (ShardShort) when that shard cannot pay; `consolidate` locks every shard of the workspace,
 * charges the total (overage past it when the workspace allows) and spreads the rest evenly.
 */
export type CreditMode = 'shard' | 'consolidate';

export interface QuotaRequest {
  orgId: string;
  domainId: string;
  domain: string;
  /** NOTIFY the domain's drain channel in the same statement (an immediate send): a running drain sees the email at commit. */
  notifyChannel?: string;
  /** The UTC day the email counts against, `YYYY-MM-DD`. */
  day: string;
  /** Recipients: credits to take and messages to count. */
  count: number;
  /** The domain's warm-up cap per UTC day; null for none. */
  cap: number | null;
  /** The credit shard charged (overage included) and the warm-up counter shard counted: quotaShardFor. */
  shard: number;
  mode: CreditMode;
  now: Date;
}

/**
 * The shard an acceptance charges and counts on: a random one, except on a capped domain, whose
 * counter stays in shard 0 so the cap is checked under one row lock (a capped domain is a
 * warming-up one, whose volume is small by definition).
 */
export function quotaShardFor(cap: number | null): number {
  return cap === null ? pickCreditShard() : 0;
}

/** The charged shard could not pay: the acceptance is redone with `consolidate`. */
export class ShardShort extends Error {
  constructor() {
    super('the credit shard picked for this send is short; consolidating');
  }
}

/** The columns quotaCtes adds to its statement's result row (balance: the total, read by `consolidate` only). */
export interface ReservationRow {
  draining: boolean;
  from_balance: number | null;
  balance: number | null;
  day_count: number | null;
  used: number;
}

/** Credits taken from the request's shard alone (q_charge: one row with from_balance, or none). */
function shardCharge(after: string): string {
  return `
    q_charge as (
      update credit_shards s set balance = s.balance - :qCount
        from ${after}
       where s.org_id = :qOrg and s.shard = :qShard and s.balance >= :qCount
      returning :qCount::int as from_balance
    )`;
}

/**
 * Credits taken from the workspace's total: every shard locked in shard order (after `after`),
 * the charge and what is left spread over them in one update; q_charge has one row with
 * from_balance when the total pays (or overage is on), none otherwise.
 */
function consolidatedCharge(after: string): string {
  return `
    q_locked as (
      select s.shard, s.balance from credit_shards s, ${after} where s.org_id = :qOrg order by s.shard for update of s
    ),
    q_total as (select coalesce(sum(balance), 0)::int as total, count(*)::int as n from q_locked),
    q_charge as (
      select least(t.total, :qCount) as from_balance, t.total - least(t.total, :qCount) as rest, t.n
        from q_total t
       where t.n > 0 and (t.total >= :qCount or (select overage_enabled from organizations where id = :qOrg))
    ),
    q_spread as (
      update credit_shards s
         set balance = ${spreadBalanceSql('k.rest', 'k.n', 'l.pos')},
             overage_used = s.overage_used + case when s.shard = :qShard then :qCount - k.from_balance else 0 end
        from q_charge k, (select shard, row_number() over (order by shard) - 1 as pos from q_locked) l
       where s.org_id = :qOrg and s.shard = l.shard
      returning s.shard
    )`;
}

/**
 * The reservation as CTEs of the acceptance statement (without `with`; named `q_*`) and the
 * select-list expressions (`columns`) that report it: takes `count` credits (per the request's
 * mode) and counts `count` messages against the domain's cap for the day. The credit shards and
 * the counter are the hot rows every send writes; `after` names a CTE whose row must exist
 * first, so they are locked last in the statement (and in a fixed order after the thread row
 * the statement updates). The email row takes the charge from `q_charge`.
 * The row is judged by chargeOf, which throws the refusals (402, 429) and ShardShort. With
 * `refuseInStatement` a refused reservation fails the statement instead (herald_refuse, its
 * figures in the error's detail: refusalRow), for a statement sent with its COMMIT.
 */
export function quotaCtes(
  request: QuotaRequest,
  after: string,
  options: { refuseInStatement?: boolean } = {},
): SqlFragment & { columns: string } {
  const capped = request.cap !== null;
  // The counter is written from q_charge, so its row is locked after the credit shard(s) in
  // every plan (PostgreSQL runs CTEs in no promised order; two sends taking the same two rows in
  // opposite orders deadlock), and only once the credits are taken. A capped domain counts on
  // shard 0 (quotaShardFor) and checks the day's sum over all shards: rows of other shards exist
  // when the cap was set during the day.
  const otherShards =
    '/* workspace: the sending domain was read under the workspace of the caller */ coalesce((select sum(d.count) from domain_daily_sends d where d.domain_id = :qDomain and d.day = :qDay and d.shard <> :qShard), 0)';
  const sql = `${request.mode === 'shard' ? shardCharge(after) : consolidatedCharge(after)},
    q_counted as (
      insert into domain_daily_sends (domain_id, day, shard, org_id, count)
      select :qDomain::varchar, :qDay::varchar, :qShard::smallint, :qOrg::varchar, :qCount::int
        from q_charge where ${capped ? `:qCount + ${otherShards} <= :qCap` : 'true'}
      on conflict (domain_id, day, shard) do update set count = domain_daily_sends.count + excluded.count
      ${capped ? `where domain_daily_sends.count + excluded.count + ${otherShards} <= :qCap` : ''}
      returning count
    )`;
  const figures = {
    from_balance: '(select from_balance from q_charge)',
    balance: request.mode === 'consolidate' ? '(select total from q_total)' : 'null::int',
    day_count: '(select count from q_counted)',
    used: capped
      ? 'coalesce((select sum(count) from domain_daily_sends where domain_id = :qDomain /* workspace: the sending domain was read under the workspace of the caller */ and day = :qDay), 0)::int'
      : '0',
  };
  // The refusal's figures as the error's detail (refusalRow): the statement fails instead of answering them.
  const refusal = `case when ${figures.from_balance} is null or ${figures.day_count} is null
                        then herald_refuse(json_build_object(${Object.entries(figures)
                          .map(([name, sql]) => `'${name}', ${sql}`)
                          .join(', ')})::text) end as refused`;
  const columns = `/* workspace: the sending domain was read under the workspace of the caller */
      ${Object.entries(figures)
        .map(([name, sql]) => `${sql} as ${name}`)
        .join(',\n      ')},
      coalesce((select drain_lease_until > now() from domains where id = :qDomain), false) as draining
      ${options.refuseInStatement ? `, ${refusal}` : ''}
      ${request.notifyChannel ? ', pg_notify(:qChannel, :qDomain) is null as notified' : ''}`;
  return {
    sql,
    columns,
    params: {
      qOrg: request.orgId,
      qCount: request.count,
      qShard: request.shard,
      qDomain: request.domainId,
      qDay: request.day,
      ...(capped ? { qCap: request.cap } : {}),
      ...(request.notifyChannel ? { qChannel: request.notifyChannel } : {}),
    },
  };
}

/** The SQLSTATE of herald_refuse (db/migrations/Migration20261130010000.ts). */
const REFUSED_SQLSTATE = 'HR001';

/** The reservation row a statement run with `refuseInStatement` failed with, or null for any other error. */
export function refusalRow(error: unknown): ReservationRow | null {
  const { code, detail } = (error ?? {}) as { code?: unknown; detail?: unknown };
  if (code !== REFUSED_SQLSTATE || typeof detail !== 'string') return null;
  return { ...(JSON.parse(detail) as Omit<ReservationRow, 'draining'>), draining: false };
}

/** The charge the reservation made, or the refusal: 402 when credits are short and overage is off, 429 when the cap is reached. */
export function chargeOf(row: ReservationRow | undefined, request: QuotaRequest): CreditCharge {
  const { count, cap } = request;
  if (!row || row.from_balance === null) {
    if (request.mode === 'shard') throw new ShardShort();
    throw new AppError(
      'payment_required',
      `Not enough transactional credits: this send needs ${count} (one per recipient) and ${row?.balance ?? 0} are left.`,
      { reason: 'INSUFFICIENT_CREDITS', required: count, available: Number(row?.balance ?? 0) },
    );
  }
  if (row.day_count === null) {
    throw new AppError(
      'rate_limited',
      `The daily warm-up cap of ${request.domain} (${cap} messages per UTC day) is reached for ${request.day}; ${row.used} counted so far.`,
      { reason: 'DAILY_CAP_REACHED', domain: request.domain, day: request.day, cap, used: Number(row.used), requested: count },
      { retryAfterSeconds: secondsUntilNextUtcDay(request.now) },
    );
  }
  return { fromBalance: Number(row.from_balance), overage: count - Number(row.from_balance), domainDraining: row.draining };
}

async function releaseDomainQuota(em: EntityManager, domainId: string, day: string, shard: number, count: number): Promise<void> {
  if (count === 0) return;
  await em.execute(
    '/* workspace: the domain of an email of the workspace */ update domain_daily_sends set count = greatest(0, count - ?) where domain_id = ? and day = ? and shard = ?',
    [count, domainId, day, shard],
  );
}

/**
 * Gives back what acceptance took for `email` (credits, overage and its warm-up count), once:
 * on a 502, a failure before anything was handed off, or a cancel. The caller flushes `email`.
 */
export async function releaseEmailQuota(
  em: EntityManager,
  email: Pick<
    TransactionalEmail,
    | 'orgId'
    | 'domainId'
    | 'quotaDay'
    | 'quotaShard'
    | 'creditsCharged'
    | 'overageCharged'
    | 'quotaReleased'
    | 'broadcastId'
    | 'automationRunId'
  >,
): Promise<void> {
  if (email.quotaReleased) return;
  await releaseCredits(em, email.orgId, email.quotaShard, { fromBalance: email.creditsCharged, overage: email.overageCharged });
  // An automation's creditsUsed counts what its emails cost in the end.
  if (email.automationRunId) await refundRunCredits(em, email.orgId, email.automationRunId, email.creditsCharged + email.overageCharged);
  // A broadcast message takes no credits and counts one message when first claimed (quotaDay set then).
  const counted = email.broadcastId ? (email.quotaDay ? 1 : 0) : email.creditsCharged + email.overageCharged;
  await releaseDomainQuota(em, email.domainId, email.quotaDay, email.quotaShard, counted);
  email.quotaReleased = true;
}
