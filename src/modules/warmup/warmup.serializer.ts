import type { Domain } from '../../../db/entities/index.ts';
import { resolvePlan, scheduleOf, type WarmupPlan } from './warmup.fns.ts';

/** What a domain's warm-up allows today and why: the `warmup` extension of the Domain option and the dashboard's domain page. */
export interface WarmupView {
  mode: Domain['warmupMode'];
  /** What warm-up limits: broadcast messages (transactional mail counts against the cap but is refused only by `manual_cap`). */
  limits: 'broadcast';
  /** The day of the schedule (1-based) and how many days it has; null when off. */
  day: number | null;
  days: number | null;
  /** The cap of today's step (null: none), the operator's fixed cap, and the lower of the two, which applies. */
  cap_today: number | null;
  manual_cap: number | null;
  effective_cap: number | null;
  used_today: number;
  /** The cap of the next step if today goes well, and when today's rates are judged (the next UTC midnight). */
  next_cap: number | null;
  next_evaluation_at: string | null;
  last_evaluation: Record<string, unknown> | null;
  plan: WarmupPlan;
}

const nextUtcMidnight = (now: Date) => new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)).toISOString();

export function serializeWarmup(
  domain: Pick<Domain, 'warmupMode' | 'warmupStep' | 'warmupCap' | 'warmupPlan' | 'warmupLast' | 'dailyCap'>,
  workspacePlan: Record<string, unknown> | null | undefined,
  usedToday: number,
  now: Date,
): WarmupView {
  const plan = resolvePlan(workspacePlan, domain.warmupPlan);
  const active = domain.warmupMode === 'new' || domain.warmupMode === 'existing';
  const schedule = active ? scheduleOf(plan, domain.warmupMode as 'new' | 'existing') : null;
  const caps = [domain.warmupCap, domain.dailyCap].filter((cap): cap is number => cap !== null && cap !== undefined);
  return {
    mode: domain.warmupMode,
    limits: 'broadcast',
    day: schedule ? domain.warmupStep + 1 : null,
    days: schedule ? schedule.length : null,
    cap_today: active ? (domain.warmupCap ?? null) : null,
    manual_cap: domain.dailyCap ?? null,
    effective_cap: caps.length > 0 ? Math.min(...caps) : null,
    used_today: usedToday,
    next_cap: schedule ? (schedule[domain.warmupStep + 1] ?? null) : null,
    next_evaluation_at: active ? nextUtcMidnight(now) : null,
    last_evaluation: domain.warmupLast ?? null,
    plan,
  };
}
