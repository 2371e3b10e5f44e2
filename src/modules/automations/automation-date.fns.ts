/**
 * The date trigger's calendar (pure): which contact dates fire today, in the automation's time
 * zone. A contact's date is the `YYYY-MM-DD` it holds (an ISO timestamp's own date part, its
 * time and offset ignored; `created_at` is taken in the automation's time zone). An occurrence
 * is the date itself (`once`) or each anniversary of it in a later year (`yearly`; Feb 29 falls
 * on Feb 28 in other years), moved by `offset_days`; it fires on that local day once the local
 * time reaches `at`. Days already past are not caught up (docs/decisions.md, 2026-11-27).
 * The scan (automation-date.repo.ts) applies the match in SQL as `occursToday` does here.
 */
import type { AutomationTrigger } from './automation-definition.ts';

export type DateTrigger = Extract<AutomationTrigger, { type: 'date' }>;

/** A local calendar day and the minutes since its midnight. */
export interface LocalClock {
  date: string;
  minutes: number;
}

/** What contact dates fire today: one exact date (`once`), or month-days of years before `beforeYear` (`yearly`). */
export type DateMatch =
  { today: string; repeat: 'once'; date: string } | { today: string; repeat: 'yearly'; monthDays: string[]; beforeYear: number };

const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:$|[T ])/;

/** The day and time of day `now` is in `timeZone`. */
export function localClock(now: Date, timeZone: string): LocalClock {
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-CA', {
      timeZone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    })
      .formatToParts(now)
      .map((part) => [part.type, part.value]),
  );
  return { date: `${parts.year}-${parts.month}-${parts.day}`, minutes: Number(parts.hour) * 60 + Number(parts.minute) };
}

/** `date` (YYYY-MM-DD) moved by whole days. */
export function addDays(date: string, days: number): string {
  const moved = new Date(`${date}T00:00:00Z`);
  moved.setUTCDate(moved.getUTCDate() + days);
  return moved.toISOString().slice(0, 10);
}

export function isLeapYear(year: number): boolean {
  return year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0);
}

/** Minutes since midnight of `HH:MM`. */
export function minutesOf(time: string): number {
  return Number(time.slice(0, 2)) * 60 + Number(time.slice(3, 5));
}

/**
 * The dates that fire at `now` in `timeZone`, or null while the local time is before the
 * trigger's `at`. The occurrence's anchor is today minus the offset (a date 3 days before a
 * birthday fires when the birthday is 3 days ahead).
 */
export function dateMatch(trigger: DateTrigger, now: Date, timeZone: string): DateMatch | null {
  const clock = localClock(now, timeZone);
  if (clock.minutes < minutesOf(trigger.at)) return null;
  return matchOn(trigger, clock.date);
}

/** The dates that fire on the local day `today` (YYYY-MM-DD), whatever the time of day. */
export function matchOn(trigger: DateTrigger, today: string): DateMatch {
  const anchor = addDays(today, -trigger.offset_days);
  if (trigger.repeat === 'once') return { today, repeat: 'once', date: anchor };
  const year = Number(anchor.slice(0, 4));
  const monthDay = anchor.slice(5);
  const monthDays = monthDay === '02-28' && !isLeapYear(year) ? [monthDay, '02-29'] : [monthDay];
  return { today, repeat: 'yearly', monthDays, beforeYear: year };
}

/** The zones furthest behind and ahead of UTC (UTC-12 and UTC+14): every zone's day at an instant lies between theirs. */
const EARLIEST_ZONE = 'Etc/GMT+12';
const LATEST_ZONE = 'Etc/GMT-14';

/**
 * The local days the scan considers at `now`: the automation zone's day, or, for a trigger in
 * each contact's zone, every day some zone is in (two or three consecutive days).
 */
export function scanDays(trigger: DateTrigger, now: Date, automationZone: string): string[] {
  if (trigger.zone !== 'contact') return [localClock(now, automationZone).date];
  const last = localClock(now, LATEST_ZONE).date;
  const days = [localClock(now, EARLIEST_ZONE).date];
  while (days[days.length - 1]! < last) days.push(addDays(days[days.length - 1]!, 1));
  return days;
}

/**
 * The index keys (`<field>|YYYY-MM-DD` for `once`, `<field>|MM-DD` for `yearly`, as
 * `herald_contact_custom_date_keys` writes a custom field's; `created_at`'s are read as day
 * ranges, automation-date.repo.ts) of every contact date that can fire on
 * one of `days`. `created_at` is keyed by its UTC day, so its keys take a day either side: its
 * day in any zone is at most one away.
 */
export function windowKeys(trigger: DateTrigger, days: readonly string[]): string[] {
  const keys = new Set<string>();
  for (const day of days) {
    const match = matchOn(trigger, day);
    // A yearly month-day is moved within leap year 2000, where Feb 29 exists.
    const anchors = match.repeat === 'once' ? [match.date] : match.monthDays.map((monthDay) => `2000-${monthDay}`);
    for (const anchor of anchors) {
      const near = trigger.field === 'created_at' ? [-1, 0, 1].map((d) => addDays(anchor, d)) : [anchor];
      for (const date of near) keys.add(`${trigger.field}|${match.repeat === 'once' ? date : date.slice(5)}`);
    }
  }
  return [...keys].sort();
}

/**
 * The local day a contact's date fires on at `now`, or null: its zone is its own (the
 * `timezone` custom field, when a valid zone) for a trigger in the contact's zone, else the
 * automation's; `created_at` is taken as its day in that zone.
 */
export function contactFiresOn(
  trigger: DateTrigger,
  now: Date,
  automationZone: string,
  contact: { value: unknown; createdAt: Date; timezone: unknown },
  isZone: (zone: string) => boolean,
): string | null {
  const own = contact.timezone;
  const zone = trigger.zone === 'contact' && typeof own === 'string' && isZone(own) ? own : automationZone;
  const match = dateMatch(trigger, now, zone);
  if (!match) return null;
  const text = trigger.field === 'created_at' ? localClock(contact.createdAt, zone).date : contact.value;
  return occursToday(match, text) ? match.today : null;
}

/**
 * Whether a contact's date text fires under `match`: text that is no `YYYY-MM-DD` date (or an
 * ISO timestamp starting with one) never does, nor does Feb 29 of a year that has none.
 */
export function occursToday(match: DateMatch, text: unknown): boolean {
  if (typeof text !== 'string') return false;
  const parsed = DATE_TEXT.exec(text);
  if (!parsed) return false;
  const date = `${parsed[1]}-${parsed[2]}-${parsed[3]}`;
  if (match.repeat === 'once') return date === match.date;
  const year = Number(parsed[1]);
  const monthDay = date.slice(5);
  if (monthDay === '02-29' && !isLeapYear(year)) return false;
  return year < match.beforeYear && match.monthDays.includes(monthDay);
}
