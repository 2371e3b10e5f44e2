/**
 * The warm-up plan of one egress source address (not of a domain: the domain warm-up plan is
 * separate; the two can share a shape later). Messages per UTC day by warm-up day, day 1 being
 * the first day the address carried mail. Days 1–7 are Resend's published plan for a new
 * domain (150 → 2,000); days 8–11 continue with the upper steps of its plan for an established
 * one (2,500 → 10,000); from day 12 the address is warm and uncapped.
 */
export const ADDRESS_WARMUP_PLAN: readonly number[] = [150, 250, 400, 700, 1_000, 1_500, 2_000, 2_500, 5_000, 7_500, 10_000];

/** The daily cap of an address on warm-up day `day` (1-based); null once the plan is over (full volume). */
export function addressDailyCap(day: number, plan: readonly number[] = ADDRESS_WARMUP_PLAN): number | null {
  if (day < 1) return plan[0] ?? null;
  return plan[day - 1] ?? null;
}

/** The warm-up day (1-based) on UTC day `today` of an address first used on `firstDay` (both `YYYY-MM-DD`). */
export function warmupDay(firstDay: string, today: string): number {
  return Math.floor((Date.parse(`${today}T00:00:00Z`) - Date.parse(`${firstDay}T00:00:00Z`)) / 86_400_000) + 1;
}
