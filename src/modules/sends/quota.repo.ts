import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.ts';
import { secondsUntilNextUtcDay } from './sends.fns.ts';

/**
 * Credits and the domain warm-up cap, reserved at acceptance and released on a 502, a
 * permanent failure before hand-off, or a cancel. Both run inside the acceptance transaction,
 * so a refused send (402, 429) or a rollback leaves no reservation behind; the row locks make
 * concurrent sends queue on the same workspace/domain instead of overselling.
 */

export interface CreditCharge {
  fromBalance: number;
  overage: number;
}

/**
 * Takes `count` credits from the workspace: from the balance, and past it as overage when the
 * workspace has overage on; otherwise 402 payment_required without taking anything.
 */
export async function reserveCredits(em: EntityManager, orgId: string, count: number): Promise<CreditCharge> {
  const rows: { from_balance: number; balance: number; overage_enabled: boolean }[] = await em.execute(
    `with current as (select id, credit_balance, overage_enabled from organizations where id = ? for update)
     update organizations o
        set credit_balance = o.credit_balance - least(c.credit_balance, ?),
            overage_used = o.overage_used + (? - least(c.credit_balance, ?))
       from current c
      where o.id = c.id and (c.credit_balance >= ? or c.overage_enabled)
      returning least(c.credit_balance, ?) as from_balance, c.credit_balance as balance, c.overage_enabled`,
    [orgId, count, count, count, count, count],
  );
  const [row] = rows;
  if (!row) {
    const [state]: { credit_balance: number }[] = await em.execute('select credit_balance from organizations where id = ?', [orgId]);
    throw new AppError(
      'payment_required',
      `Not enough transactional credits: this send needs ${count} (one per recipient) and ${state?.credit_balance ?? 0} are left.`,
      { reason: 'INSUFFICIENT_CREDITS', required: count, available: state?.credit_balance ?? 0 },
    );
  }
  return { fromBalance: Number(row.from_balance), overage: count - Number(row.from_balance) };
}

/** Gives back what reserveCredits took. */
export async function releaseCredits(em: EntityManager, orgId: string, charge: CreditCharge): Promise<void> {
  if (charge.fromBalance === 0 && charge.overage === 0) return;
  await em.execute(
    'update organizations set credit_balance = credit_balance + ?, overage_used = greatest(0, overage_used - ?) where id = ?',
    [charge.fromBalance, charge.overage, orgId],
  );
}

/**
 * Counts `count` messages against the domain's warm-up cap for `day` (UTC). Over the cap:
 * 429 rate_limited with Retry-After until the next UTC day (details.reason DAILY_CAP_REACHED).
 */
export async function reserveDomainQuota(
  em: EntityManager,
  input: { orgId: string; domainId: string; domain: string; day: string; count: number; cap: number | null; now: Date },
): Promise<void> {
  const refuse = (used: number) => {
    const retryAfter = secondsUntilNextUtcDay(input.now);
    return new AppError(
      'rate_limited',
      `The daily warm-up cap of ${input.domain} (${input.cap} messages per UTC day) is reached for ${input.day}; ${used} counted so far.`,
      { reason: 'DAILY_CAP_REACHED', domain: input.domain, day: input.day, cap: input.cap, used, requested: input.count },
      { 'Retry-After': String(retryAfter) },
    );
  };
  if (input.cap !== null && input.count > input.cap) throw refuse(0);
  const rows: { count: number }[] = await em.execute(
    `insert into domain_daily_sends (domain_id, day, org_id, count) values (?, ?, ?, ?)
     on conflict (domain_id, day) do update set count = domain_daily_sends.count + excluded.count
     ${input.cap === null ? '' : 'where domain_daily_sends.count + excluded.count <= ?'}
     returning count`,
    input.cap === null
      ? [input.domainId, input.day, input.orgId, input.count]
      : [input.domainId, input.day, input.orgId, input.count, input.cap],
  );
  if (rows.length === 0) {
    const [state]: { count: number }[] = await em.execute('select count from domain_daily_sends where domain_id = ? and day = ?', [input.domainId, input.day]);
    throw refuse(Number(state?.count ?? 0));
  }
}

export async function releaseDomainQuota(em: EntityManager, domainId: string, day: string, count: number): Promise<void> {
  if (count === 0) return;
  await em.execute('update domain_daily_sends set count = greatest(0, count - ?) where domain_id = ? and day = ?', [count, domainId, day]);
}
