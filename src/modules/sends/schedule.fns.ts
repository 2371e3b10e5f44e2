import * as chrono from 'chrono-node';

/** A send may be scheduled at most this far ahead (spec, Limits: scheduling up to 30 days). */
export const MAX_SCHEDULE_AHEAD_MS = 30 * 24 * 3600 * 1000;
/**
 * A time at most this far in the past (clock skew, "now") means "send now"; anything older is
 * refused as in the past.
 */
export const PAST_TOLERANCE_MS = 60_000;

export type ScheduleResult =
  { ok: true; at: Date | null } | { ok: false; problem: 'unparseable' | 'in_past' | 'too_far_ahead'; message: string };

/** ISO 8601 date-time with an optional offset (none means UTC); calendar-checked below. */
const ISO_PATTERN = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?$/;

function parseIso(value: string): Date | null {
  const match = ISO_PATTERN.exec(value);
  if (!match) return null;
  const [, year, month, day, hour, minute, second = '00', fraction = '', zone = 'Z'] = match;
  const offset = zone.toUpperCase() === 'Z' ? 'Z' : zone.length === 5 ? `${zone.slice(0, 3)}:${zone.slice(3)}` : zone;
  const date = new Date(`${year}-${month}-${day}T${hour}:${minute}:${second}${fraction.slice(0, 4)}${offset}`);
  if (Number.isNaN(date.getTime())) return null;
  // Reject dates JavaScript rolls over (31 February) by checking the calendar day back.
  const probe = new Date(Date.UTC(Number(year), Number(month) - 1, Number(day)));
  if (probe.getUTCMonth() !== Number(month) - 1 || probe.getUTCDate() !== Number(day)) return null;
  if (Number(hour) > 23 || Number(minute) > 59 || Number(second) > 59) return null;
  return date;
}

/** Natural language ("in 2 hours", "tomorrow at 9am", "friday 15:00 UTC") read in UTC; the whole text must parse. */
function parseNatural(value: string, now: Date): Date | null {
  const results = chrono.parse(value, { instant: now, timezone: 'UTC' }, { forwardDate: true });
  const [first] = results;
  if (results.length !== 1 || !first) return null;
  if (first.index !== 0 || first.text.trim().length !== value.length) return null;
  return first.date();
}

/**
 * Resolves a send's `scheduled_at` (ISO 8601 or natural language, UTC unless an offset or zone
 * is named) against `now`. Null `at` means send now: the value was absent, or resolved to a
 * time no more than a minute ago or in the future by less than a second. More than a minute in
 * the past, or more than 30 days ahead, is refused.
 */
export function resolveSchedule(value: string | undefined, now: Date): ScheduleResult {
  if (value === undefined) return { ok: true, at: null };
  const text = value.trim();
  const at = parseIso(text) ?? parseNatural(text, now);
  if (at === null) {
    return {
      ok: false,
      problem: 'unparseable',
      message: 'must be an ISO 8601 date-time or a time such as "in 2 hours" or "tomorrow at 9am UTC"',
    };
  }
  const ahead = at.getTime() - now.getTime();
  if (ahead < -PAST_TOLERANCE_MS)
    return { ok: false, problem: 'in_past', message: `resolves to ${at.toISOString()}, which is in the past` };
  if (ahead > MAX_SCHEDULE_AHEAD_MS) {
    return { ok: false, problem: 'too_far_ahead', message: `resolves to ${at.toISOString()}, more than 30 days ahead` };
  }
  return { ok: true, at: ahead < 1000 ? null : at };
}
