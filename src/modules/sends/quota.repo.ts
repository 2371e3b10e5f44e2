import type { EntityManager } from '@mikro-orm/postgresql';
import type { TransactionalEmail } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { secondsUntilNextUtcDay } from './sends.fns.ts';

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
  emailId: string;
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

interface ReservationRow {
  draining: boolean;
  from_balance: number | null;
  balance: number;
  day_count: number | null;
  used: number;
}

/**
 * Takes `count` credits from the workspace (from the balance, and past it as overage when
 * overage is on) and counts `count` messages against the domain's cap for the day, and stamps
 * the charge on the email row, in one statement: the workspace's credit row and the domain's
 * counter are the hot rows every send of a workspace writes, so they are touched last and in a
 * single round trip before the commit. Refusals throw (402 when credits are short and overage
 * is off, 429 when the cap is reached); the caller's transaction then rolls everything back.
 */
export async function reserveQuota(em: EntityManager, request: QuotaRequest): Promise<CreditCharge> {
  const { count, cap } = request;
  const capped = cap !== null;
  const rows: ReservationRow[] = await em.execute(
    `with current as (
       select id, credit_balance, overage_enabled from organizations where id = ? for update
     ), charged as (
       update organizations o
          set credit_balance = o.credit_balance - least(c.credit_balance, ?),
              overage_used = o.overage_used + (? - least(c.credit_balance, ?))
         from current c
        where o.id = c.id and (c.credit_balance >= ? or c.overage_enabled)
        returning least(c.credit_balance, ?) as from_balance
     ), counted as (
       insert into domain_daily_sends (domain_id, day, org_id, count)
       select ?, ?, ?, ? where ${capped ? '? <= ?' : 'true'}
       on conflict (domain_id, day) do update set count = domain_daily_sends.count + excluded.count
       ${capped ? 'where domain_daily_sends.count + excluded.count <= ?' : ''}
       returning count
     ), stamped as (
       update transactional_emails
          set credits_charged = (select from_balance from charged),
              overage_charged = ? - (select from_balance from charged)
        where id = ? and exists (select 1 from charged) and exists (select 1 from counted)
        returning id
     )
     select (select from_balance from charged) as from_balance,
            (select credit_balance from current) as balance,
            (select count from counted) as day_count,
            coalesce((select count from domain_daily_sends where domain_id = ? and day = ?), 0) as used,
            coalesce((select drain_lease_until > now() from domains where id = ?), false) as draining
            ${request.notifyChannel ? ', pg_notify(?, ?) is null as notified' : ''}`,
    [
      request.orgId,
      count, count, count, count, count,
      request.domainId, request.day, request.orgId, count,
      ...(capped ? [count, cap] : []),
      ...(capped ? [cap] : []),
      count, request.emailId,
      request.domainId, request.day,
      request.domainId,
      ...(request.notifyChannel ? [request.notifyChannel, request.domainId] : []),
    ],
  );
  const row = rows[0];
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
