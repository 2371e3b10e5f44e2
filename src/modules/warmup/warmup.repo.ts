/**
 * The SQL of automatic warm-up: the domains whose step is due for its daily evaluation (with
 * what they sent and got back since the last one, from the daily rollup email_event_counts),
 * the record of a decision, and what a domain has used of today's cap.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { DomainWarmupMode } from '../../../db/entities/index.ts';
import type { StepCounts, StepOutcome } from './warmup.fns.ts';

export interface DueWarmup extends StepCounts {
  id: string;
  org_id: string;
  domain: string;
  warmup_mode: Extract<DomainWarmupMode, 'new' | 'existing'>;
  warmup_step: number;
  domain_plan: Record<string, unknown> | null;
  workspace_plan: Record<string, unknown> | null;
}

/** Up to `limit` warming domains last evaluated before `today` (`YYYY-MM-DD`), with their counts from then to yesterday. */
export async function findDueWarmups(em: EntityManager, today: string, limit: number): Promise<DueWarmup[]> {
  const rows = await em.execute<(Omit<DueWarmup, keyof StepCounts> & Record<keyof StepCounts, string | number>)[]>(
    `/* all workspaces: the warm-up evaluation looks at every warming domain; counts join on the domain's workspace */
     select d.id, d.org_id, d.domain, d.warmup_mode, d.warmup_step, d.warmup_plan as domain_plan, o.warmup_plan as workspace_plan,
            coalesce(sum(c.count) filter (where c.type = 'sent'), 0) as sent,
            coalesce(sum(c.count) filter (where c.type = 'bounced'), 0) as bounced,
            coalesce(sum(c.count) filter (where c.type = 'complained'), 0) as complained
       from domains d
       join organizations o on o.id = d.org_id
       left join email_event_counts c on c.org_id = d.org_id and c.domain = d.domain
            and c.day >= coalesce(d.warmup_evaluated_on, :today::date) and c.day < :today::date
      where d.warmup_mode in ('new', 'existing') and (d.warmup_evaluated_on is null or d.warmup_evaluated_on < :today::date)
      group by d.id, o.id
      order by d.id
      limit :limit`,
    { today, limit },
  );
  return rows.map((row) => ({ ...row, sent: Number(row.sent), bounced: Number(row.bounced), complained: Number(row.complained) }));
}

/** Records a decision for `today`, unless another pass recorded one already (false then). */
export async function recordStep(
  em: EntityManager,
  due: Pick<DueWarmup, 'id' | 'org_id'>,
  outcome: StepOutcome,
  today: string,
): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update domains set warmup_step = :step, warmup_cap = :cap, warmup_evaluated_on = :today::date,
            warmup_mode = case when :done then 'done' else warmup_mode end,
            warmup_last = :last::jsonb, updated_at = now()
      where id = :id and org_id = :org and warmup_mode in ('new', 'existing')
        and (warmup_evaluated_on is null or warmup_evaluated_on < :today::date)
      returning id`,
    {
      id: due.id,
      org: due.org_id,
      step: outcome.step,
      cap: outcome.cap,
      today,
      done: outcome.decision === 'done',
      last: JSON.stringify({ ...outcome, day: today }),
    },
  );
  return rows.length > 0;
}

/** Messages counted against the domain's cap on UTC day `day` (transactional and broadcast alike). */
export async function countUsedToday(em: EntityManager, orgId: string, domainId: string, day: string): Promise<number> {
  const [row] = await em.execute<{ used: number }[]>(
    `select coalesce(sum(count), 0)::int as used from domain_daily_sends where org_id = ? and domain_id = ? and day = ?`,
    [orgId, domainId, day],
  );
  return row?.used ?? 0;
}

/** Sets a domain's warm-up columns (mode, step, cap, plan) as given; false when the domain is not the workspace's. */
export async function writeDomainWarmup(
  em: EntityManager,
  orgId: string,
  domainId: string,
  fields: { mode: DomainWarmupMode; step: number; cap: number | null; plan: Record<string, unknown> | null; restartOn: string | null },
): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update domains set warmup_mode = :mode, warmup_step = :step, warmup_cap = :cap, warmup_plan = :plan::jsonb,
            warmup_evaluated_on = coalesce(:restartOn::date, warmup_evaluated_on),
            warmup_last = case when :restartOn::date is null then warmup_last else null end, updated_at = now()
      where id = :id and org_id = :org
      returning id`,
    {
      mode: fields.mode,
      step: fields.step,
      cap: fields.cap,
      plan: fields.plan === null ? null : JSON.stringify(fields.plan),
      restartOn: fields.restartOn,
      id: domainId,
      org: orgId,
    },
  );
  return rows.length > 0;
}
