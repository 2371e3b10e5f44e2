import type { DomainWarmupMode } from '../../../db/entities/index.ts';

/**
 * The warm-up plan as data, and the arithmetic of one daily step. A plan holds two schedules of
 * daily caps (a domain new to sending, and one moving to Herald with a sending history), one
 * step per UTC day while the domain stays healthy; past the last step the domain sends at full
 * volume. The default follows Resend's published plan for its first week, then keeps growing by
 * about half a step at a time to 50,000 a day.
 */
export interface WarmupPlan {
  new_domain: number[];
  existing_domain: number[];
  /** Bounce rate (bounced / sent) at or over which the step holds; at twice it, the step goes back. */
  max_bounce_rate: number;
  max_complaint_rate: number;
  /** Messages sent during a step before its rates count: fewer and the step holds (nothing proven yet). */
  min_volume: number;
  /** Whether a step goes back one when a rate reaches twice its threshold (otherwise it holds). */
  step_back: boolean;
}

export const DEFAULT_WARMUP_PLAN: WarmupPlan = {
  new_domain: [150, 250, 400, 700, 1000, 1500, 2000, 3000, 5000, 8000, 12000, 20000, 35000, 50000],
  existing_domain: [1000, 2500, 5000, 5000, 7500, 7500, 10000, 15000, 25000, 50000],
  max_bounce_rate: 0.04,
  max_complaint_rate: 0.0008,
  min_volume: 50,
  step_back: true,
};

export type WarmupPlanOverride = Partial<WarmupPlan>;

/** The plan in force: the default, then the workspace's override, then the domain's (field by field). */
export function resolvePlan(...overrides: (Record<string, unknown> | null | undefined)[]): WarmupPlan {
  return overrides.reduce<WarmupPlan>((plan, override) => ({ ...plan, ...(override as WarmupPlanOverride | null) }), DEFAULT_WARMUP_PLAN);
}

export type ActiveMode = Extract<DomainWarmupMode, 'new' | 'existing'>;

export function scheduleOf(plan: WarmupPlan, mode: ActiveMode): number[] {
  return mode === 'new' ? plan.new_domain : plan.existing_domain;
}

/** What a domain sent and what came back during a step. */
export interface StepCounts {
  sent: number;
  bounced: number;
  complained: number;
}

export type StepDecision = 'advance' | 'hold' | 'step_back' | 'done';

export interface StepOutcome {
  decision: StepDecision;
  /** Why, in one sentence an owner can read. */
  reason: string;
  /** The step after the decision (0-based) and the cap it allows (null once done). */
  step: number;
  cap: number | null;
  bounce_rate: number;
  complaint_rate: number;
  sent: number;
}

const rate = (part: number, whole: number) => (whole > 0 ? part / whole : 0);
const percent = (value: number) => `${(value * 100).toFixed(2).replace(/\.?0+$/, '')} %`;

/**
 * The next step of a domain at `step` of `mode`'s schedule after a day with `counts`: advance
 * when it sent at least `min_volume` with both rates under their thresholds (done past the last
 * step), go back one when a rate reached twice its threshold, hold otherwise.
 */
export function decideStep(plan: WarmupPlan, mode: ActiveMode, step: number, counts: StepCounts): StepOutcome {
  const schedule = scheduleOf(plan, mode);
  const current = Math.min(Math.max(0, step), schedule.length - 1);
  const bounceRate = rate(counts.bounced, counts.sent);
  const complaintRate = rate(counts.complained, counts.sent);
  const measured = { bounce_rate: bounceRate, complaint_rate: complaintRate, sent: counts.sent };
  const at = (decision: StepDecision, next: number, reason: string): StepOutcome => ({
    decision,
    reason,
    step: next,
    cap: decision === 'done' ? null : (schedule[next] ?? null),
    ...measured,
  });
  const overBy = (factor: number) => bounceRate >= plan.max_bounce_rate * factor || complaintRate >= plan.max_complaint_rate * factor;
  const rates = `bounces ${percent(bounceRate)} (limit ${percent(plan.max_bounce_rate)}), complaints ${percent(complaintRate)} (limit ${percent(plan.max_complaint_rate)})`;
  if (counts.sent > 0 && overBy(2) && plan.step_back && current > 0) {
    return at('step_back', current - 1, `Stepped back: ${rates} on ${counts.sent} sent, twice a limit or more.`);
  }
  if (counts.sent > 0 && overBy(1)) return at('hold', current, `Held: ${rates} on ${counts.sent} sent.`);
  if (counts.sent < plan.min_volume) {
    return at('hold', current, `Held: ${counts.sent} sent at this step, fewer than the ${plan.min_volume} needed to judge its rates.`);
  }
  if (current + 1 >= schedule.length) return at('done', current, `Done: the last step went well (${rates}); full volume from now on.`);
  return at('advance', current + 1, `Advanced: ${rates} on ${counts.sent} sent.`);
}

/** The cap a domain starts with in `mode` (null when warm-up is off). */
export function initialCap(plan: WarmupPlan, mode: DomainWarmupMode): number | null {
  return mode === 'new' || mode === 'existing' ? (scheduleOf(plan, mode)[0] ?? null) : null;
}

/** The warm-up columns of a domain starting `mode` on `now`'s UTC day (day 1), under the workspace's plan. */
export function startingWarmup(mode: DomainWarmupMode, workspacePlan: Record<string, unknown> | null, now: Date) {
  const cap = initialCap(resolvePlan(workspacePlan), mode);
  return {
    warmupMode: cap === null ? ('off' as const) : mode,
    warmupStep: 0,
    warmupCap: cap,
    warmupEvaluatedOn: now.toISOString().slice(0, 10),
    warmupLast: null,
  };
}
