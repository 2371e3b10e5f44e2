import { DEFAULT_WARMUP_PLAN } from '../warmup/warmup.fns.ts';

/**
 * The warm-up plan of one egress source address: messages per UTC day by warm-up day, day 1
 * being the first day the address carried mail. It is the default plan of a new domain
 * (src/modules/warmup/warmup.fns.ts: Resend's first week, 150 → 2,000, then up to 50,000) taken
 * one day at a time: an address has no bounce history of its own to hold a step on, so it
 * advances by the calendar; past the last day it is warm and uncapped.
 */
export const ADDRESS_WARMUP_PLAN: readonly number[] = DEFAULT_WARMUP_PLAN.new_domain;

/** The daily cap of an address on warm-up day `day` (1-based); null once the plan is over (full volume). */
export function addressDailyCap(day: number, plan: readonly number[] = ADDRESS_WARMUP_PLAN): number | null {
  if (day < 1) return plan[0] ?? null;
  return plan[day - 1] ?? null;
}

/** The warm-up day (1-based) on UTC day `today` of an address first used on `firstDay` (both `YYYY-MM-DD`). */
export function warmupDay(firstDay: string, today: string): number {
  return Math.floor((Date.parse(`${today}T00:00:00Z`) - Date.parse(`${firstDay}T00:00:00Z`)) / 86_400_000) + 1;
}
