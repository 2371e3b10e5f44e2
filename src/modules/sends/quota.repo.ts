import type { EntityManager } from '@mikro-orm/postgresql';
import type { TransactionalEmail } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { secondsUntilNextUtcDay } from './sends.fns.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';

/**
 * Credits and the domain warm-up cap, reserved at acceptance and released on a 502, a
 * permanent failure before hand-off, or a cancel. The reservation runs inside the acceptance
 * transaction, so a refused send (402, 429) or a rollback leaves no reservation behind; the
 * row locks make concurrent sends queue on the same workspace/domain instead of overselling.
 */

export interface CreditCharge {
  fromBalance: number;
  overage: number;
  /** Whether the domain's drain lease is held (read in the same statement): a running drain needs no wake-up. */
  domainDraining: boolean;
}

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
  now: Date;
}

/** The columns quotaCtes adds to its statement's result row. */
export interface ReservationRow {
  draining: boolean;
  from_balance: number | null;
  balance: number;
  day_count: number | null;
  used: number;
}

/**
 * The reservation as CTEs of the acceptance statement (without `with`; named `q_*`) and the
 * select-list expressions (`quotaColumns`) that report it: takes `count` credits from the
 * workspace (from the balance, and past it as overage when overage is on) and counts `count`
 * messages against the domain's cap for the day. The workspace's credit row and the domain's
 * counter are the hot rows every send of a workspace writes; `after` names a CTE whose row
 * must exist first, so they are locked last in the statement (and in a fixed order after the
 * thread row the statement updates). The email row takes the charge from `q_charged`.
 * The row is judged by chargeOf, which throws the refusals (402, 429).
 */
export function quotaCtes(request: QuotaRequest, after: string): SqlFragment & { columns: string } {
  const capped = request.cap !== null;
  const sql = `
    q_current as (
      select o.id, o.credit_balance, o.overage_enabled from organizations o, ${after} where o.id = :qOrg for update of o
    ),
    q_charged as (
      update organizations o
         set credit_balance = o.credit_balance - least(c.credit_balance, :qCount),
             overage_used = o.overage_used + (:qCount - least(c.credit_balance, :qCount))
        from q_current c
       where o.id = c.id and (c.credit_balance >= :qCount or c.overage_enabled)
      returning least(c.credit_balance, :qCount) as from_balance
    ),
    q_counted as (
      insert into domain_daily_sends (domain_id, day, org_id, count)
      select :qDomain, :qDay, :qOrg, :qCount where ${capped ? ':qCount <= :qCap' : 'true'}
      on conflict (domain_id, day) do update set count = domain_daily_sends.count + excluded.count
      ${capped ? 'where domain_daily_sends.count + excluded.count <= :qCap' : ''}
      returning count
    )`;
  const columns = `(select from_balance from q_charged) as from_balance,
      (select credit_balance from q_current) as balance,
      (select count from q_counted) as day_count,
      coalesce((select count from domain_daily_sends where domain_id = :qDomain and day = :qDay), 0) as used,
      coalesce((select drain_lease_until > now() from domains where id = :qDomain), false) as draining
      ${request.notifyChannel ? ', pg_notify(:qChannel, :qDomain) is null as notified' : ''}`;
  return {
    sql,
    columns,
    params: {
      qOrg: request.orgId,
      qCount: request.count,
      qDomain: request.domainId,
      qDay: request.day,
      ...(capped ? { qCap: request.cap } : {}),
      ...(request.notifyChannel ? { qChannel: request.notifyChannel } : {}),
    },
  };
}

/** The charge the reservation made, or the refusal: 402 when credits are short and overage is off, 429 when the cap is reached. */
export function chargeOf(row: ReservationRow | undefined, request: QuotaRequest): CreditCharge {
  const { count, cap } = request;
  if (!row || row.from_balance === null) {
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
      { 'Retry-After': String(secondsUntilNextUtcDay(request.now)) },
    );
  }
  return { fromBalance: Number(row.from_balance), overage: count - Number(row.from_balance), domainDraining: row.draining };
}

/** Gives back what reserveQuota took from the workspace's credits. */
async function releaseCredits(em: EntityManager, orgId: string, charge: Pick<CreditCharge, 'fromBalance' | 'overage'>): Promise<void> {
  if (charge.fromBalance === 0 && charge.overage === 0) return;
  await em.execute(
    'update organizations set credit_balance = credit_balance + ?, overage_used = greatest(0, overage_used - ?) where id = ?',
    [charge.fromBalance, charge.overage, orgId],
  );
}

async function releaseDomainQuota(em: EntityManager, domainId: string, day: string, count: number): Promise<void> {
  if (count === 0) return;
  await em.execute('update domain_daily_sends set count = greatest(0, count - ?) where domain_id = ? and day = ?', [count, domainId, day]);
}

/**
 * Gives back what acceptance took for `email` (credits, overage and its warm-up count), once:
 * on a 502, a failure before anything was handed off, or a cancel. The caller flushes `email`.
 */
export async function releaseEmailQuota(
  em: EntityManager,
  email: Pick<TransactionalEmail, 'orgId' | 'domainId' | 'quotaDay' | 'creditsCharged' | 'overageCharged' | 'quotaReleased'>,
): Promise<void> {
  if (email.quotaReleased) return;
  await releaseCredits(em, email.orgId, { fromBalance: email.creditsCharged, overage: email.overageCharged });
  await releaseDomainQuota(em, email.domainId, email.quotaDay, email.creditsCharged + email.overageCharged);
  email.quotaReleased = true;
}
