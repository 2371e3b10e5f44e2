import * as v from 'valibot';
import { DOMAIN_WARMUP_MODES } from '../../../db/entities/index.ts';
import { Timestamp } from '../../http/schemas.ts';

const Schedule = v.pipe(v.array(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000_000))), v.minLength(1), v.maxLength(90));
const Rate = v.pipe(v.number(), v.minValue(0), v.maxValue(1));

/** A plan or part of one: fields left out come from the workspace's plan, then the default. */
export const WarmupPlanInput = v.strictObject({
  new_domain: v.optional(Schedule),
  existing_domain: v.optional(Schedule),
  max_bounce_rate: v.optional(Rate),
  max_complaint_rate: v.optional(Rate),
  min_volume: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0))),
  step_back: v.optional(v.boolean()),
});
export type WarmupPlanInput = v.InferOutput<typeof WarmupPlanInput>;

/** PUT /domains/{id}/warmup: start the schedule of a new or existing domain (from day 1), stop it, and/or set the domain's own plan (null: back to the workspace's). */
export const DomainWarmupInput = v.strictObject({
  mode: v.optional(v.picklist(['new', 'existing', 'off'])),
  plan: v.optional(v.nullable(WarmupPlanInput)),
});
export type DomainWarmupInput = v.InferOutput<typeof DomainWarmupInput>;

const Plan = v.object({
  new_domain: v.array(v.number()),
  existing_domain: v.array(v.number()),
  max_bounce_rate: v.number(),
  max_complaint_rate: v.number(),
  min_volume: v.number(),
  step_back: v.boolean(),
});

export const WarmupPlanResponse = v.object({ plan: Plan, overrides: v.nullable(v.record(v.string(), v.unknown())) });

export const WarmupResponse = v.object({
  mode: v.picklist(DOMAIN_WARMUP_MODES),
  limits: v.literal('broadcast'),
  day: v.nullable(v.number()),
  days: v.nullable(v.number()),
  cap_today: v.nullable(v.number()),
  manual_cap: v.nullable(v.number()),
  effective_cap: v.nullable(v.number()),
  used_today: v.number(),
  next_cap: v.nullable(v.number()),
  next_evaluation_at: v.nullable(Timestamp),
  last_evaluation: v.nullable(v.record(v.string(), v.unknown())),
  plan: Plan,
});
