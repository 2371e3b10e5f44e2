import { EMAIL_EVENT_TYPES, type EmailEventType } from '../../../db/entities/index.ts';

/** The email event types a broadcast's `metrics` object counts (delivery retries and failures are not campaign metrics). */
const BROADCAST_COUNTERS = EMAIL_EVENT_TYPES.filter((type) => type !== 'deferred' && type !== 'failed');
type BroadcastCounter = Exclude<EmailEventType, 'deferred' | 'failed'>;

/** The counters of a broadcast's `metrics` object: messages queued (`recipients`) and one per event type; zero for a draft. */
export type BroadcastMetrics = Record<BroadcastCounter | 'recipients', number>;

export const ZERO_METRICS: Readonly<BroadcastMetrics> = Object.freeze({
  recipients: 0,
  ...(Object.fromEntries(BROADCAST_COUNTERS.map((type) => [type, 0])) as Record<BroadcastCounter, number>),
});

/** A broadcast may be scheduled at most this far ahead (the spec's scheduling limit). */
export const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 3600 * 1000;

/**
 * RFC 3339 date-time: date, `T`, time with seconds, optional fraction, and `Z` or `±hh:mm`.
 * Stricter than valibot's isoTimestamp, which also takes forms `Date` cannot parse.
 */
export const DATE_TIME_PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})[Tt]([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(\.\d{1,9})?([Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/;

/** True when `value` is an RFC 3339 date-time naming a real calendar day (no 31 February). */
export function isDateTime(value: string): boolean {
  const match = DATE_TIME_PATTERN.exec(value);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const calendar = new Date(Date.UTC(year, month - 1, day));
  return calendar.getUTCFullYear() === year && calendar.getUTCMonth() === month - 1 && calendar.getUTCDate() === day;
}

export type ScheduleProblem = 'in_past' | 'too_far_ahead';

/** Why a schedule time is refused, or null when it is after `now` and at most 30 days ahead. */
export function scheduleProblem(at: Date, now: Date): ScheduleProblem | null {
  if (at.getTime() <= now.getTime()) return 'in_past';
  if (at.getTime() - now.getTime() > MAX_SCHEDULE_AHEAD_MS) return 'too_far_ahead';
  return null;
}

/** The domain part of an address, lower-cased (the form domains are stored in). */
export function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1).toLowerCase();
}

/** Distinct values in first-seen order. */
export function distinct(values: readonly string[]): string[] {
  return [...new Set(values)];
}

/** A broadcast's counters with every key present (missing ones are zero): its messages queued and its event counts. */
export function completeMetrics(recipients: number, counts: Record<string, number> | null | undefined): BroadcastMetrics {
  const metrics = { ...ZERO_METRICS, recipients };
  for (const type of BROADCAST_COUNTERS as BroadcastCounter[]) {
    const value = counts?.[type];
    if (typeof value === 'number' && Number.isFinite(value)) metrics[type] = value;
  }
  return metrics;
}

/** Where a broadcast may go from each status by the caller's launch and cancel. */
export const LAUNCHABLE_STATUSES: readonly string[] = ['draft'];
export const CANCELLABLE_STATUSES: readonly string[] = ['scheduled', 'sending'];
