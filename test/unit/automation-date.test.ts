import { describe, expect, it } from 'vitest';
import { DATE_OFFSET_DAYS, parseDefinition, triggerKey } from '../../src/modules/automations/automation-definition.ts';
import {
  addDays,
  contactFiresOn,
  dateMatch,
  localClock,
  occursToday,
  scanDays,
  windowKeys,
  type DateMatch,
  type DateTrigger,
} from '../../src/modules/automations/automation-date.fns.ts';

const steps = [{ id: 'bye', type: 'exit' }];
const parse = (trigger: Record<string, unknown>, extra: Record<string, unknown> = {}) =>
  parseDefinition({ trigger, start: 'bye', steps, ...extra });

function problemsOf(trigger: Record<string, unknown>) {
  const parsed = parse(trigger);
  if (parsed.ok) throw new Error('expected the trigger to be refused');
  return parsed.problems;
}

const trigger = (fields: Partial<DateTrigger> = {}): DateTrigger => ({
  type: 'date',
  field: 'custom.birthday',
  repeat: 'yearly',
  offset_days: 0,
  at: '09:00',
  ...fields,
});

/** The match at an instant, which must not be null. */
function matchAt(t: DateTrigger, iso: string, zone = 'UTC'): DateMatch {
  const match = dateMatch(t, new Date(iso), zone);
  if (!match) throw new Error(`expected ${iso} in ${zone} to be at or after ${t.at}`);
  return match;
}

describe('the date trigger definition', () => {
  it('accepts a date trigger and fills offset 0 and 09:00; it keys on nothing (the scan enrols per automation)', () => {
    const parsed = parse({ type: 'date', field: 'custom.birthday', repeat: 'yearly' });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    expect(parsed.definition.trigger).toEqual({ type: 'date', field: 'custom.birthday', repeat: 'yearly', offset_days: 0, at: '09:00' });
    expect(triggerKey(parsed.definition.trigger)).toBeNull();
    expect(parse({ type: 'date', field: 'created_at', repeat: 'once', offset_days: -7, at: '23:59' }).ok).toBe(true);
  });

  it('accepts the offset range on both sides and refuses past it', () => {
    expect(DATE_OFFSET_DAYS).toEqual({ min: -365, max: 365 });
    expect(parse({ type: 'date', field: 'created_at', repeat: 'yearly', offset_days: -365 }).ok).toBe(true);
    expect(parse({ type: 'date', field: 'created_at', repeat: 'yearly', offset_days: 365 }).ok).toBe(true);
    expect(problemsOf({ type: 'date', field: 'created_at', repeat: 'yearly', offset_days: -366 })).toEqual([
      { path: 'trigger.offset_days', message: 'must be at least -365 (days before the date)' },
    ]);
    expect(problemsOf({ type: 'date', field: 'created_at', repeat: 'yearly', offset_days: 366 })).toEqual([
      { path: 'trigger.offset_days', message: 'must be at most 365 (days after the date)' },
    ]);
    expect(problemsOf({ type: 'date', field: 'created_at', repeat: 'yearly', offset_days: 1.5 })).toEqual([
      { path: 'trigger.offset_days', message: 'must be a whole number of days' },
    ]);
  });

  it('refuses a field that is neither created_at nor a custom field, a bad time and an unknown repeat', () => {
    for (const field of ['birthday', 'custom.', 'custom.birth-day', 'email', 'created_at2']) {
      expect(problemsOf({ type: 'date', field, repeat: 'yearly' })).toEqual([
        { path: 'trigger.field', message: 'must be created_at or custom.<name> (a custom field: 1 to 64 letters, digits or _)' },
      ]);
    }
    for (const at of ['24:00', '9:00', '09:60', 'noon']) {
      expect(problemsOf({ type: 'date', field: 'created_at', repeat: 'yearly', at })).toEqual([
        { path: 'trigger.at', message: 'must be HH:MM (00:00 to 23:59)' },
      ]);
    }
    expect(problemsOf({ type: 'date', field: 'created_at', repeat: 'monthly' })).toEqual([
      { path: 'trigger.repeat', message: 'must be yearly or once' },
    ]);
    expect(problemsOf({ type: 'date', field: 'created_at' })[0]?.path).toBe('trigger.repeat');
  });
});

describe('the date trigger calendar', () => {
  it('reads the local day and time in the time zone, across the date line', () => {
    expect(localClock(new Date('2026-11-27T23:30:00Z'), 'UTC')).toEqual({ date: '2026-11-27', minutes: 23 * 60 + 30 });
    expect(localClock(new Date('2026-11-27T23:30:00Z'), 'Asia/Tokyo')).toEqual({ date: '2026-11-28', minutes: 8 * 60 + 30 });
    expect(localClock(new Date('2026-11-27T03:00:00Z'), 'America/Los_Angeles')).toEqual({ date: '2026-11-26', minutes: 19 * 60 });
    expect(localClock(new Date('2026-11-27T00:00:00Z'), 'UTC').minutes).toBe(0);
  });

  it('fires nothing before the local time reaches `at`, and the whole rest of the local day after', () => {
    expect(dateMatch(trigger(), new Date('2026-11-27T08:59:00Z'), 'UTC')).toBeNull();
    expect(matchAt(trigger(), '2026-11-27T09:00:00Z').today).toBe('2026-11-27');
    expect(matchAt(trigger(), '2026-11-27T23:59:00Z').today).toBe('2026-11-27');
    // 09:00 in Paris (UTC+1 in November) is 08:00 UTC.
    expect(dateMatch(trigger(), new Date('2026-11-27T07:59:00Z'), 'Europe/Paris')).toBeNull();
    expect(matchAt(trigger(), '2026-11-27T08:00:00Z', 'Europe/Paris').today).toBe('2026-11-27');
    // 23:30 UTC is already the 28th at 08:30 in Tokyo: before 09:00 there, after 08:00.
    expect(dateMatch(trigger(), new Date('2026-11-27T23:30:00Z'), 'Asia/Tokyo')).toBeNull();
    expect(matchAt(trigger({ at: '08:00' }), '2026-11-27T23:30:00Z', 'Asia/Tokyo').today).toBe('2026-11-28');
  });

  it('yearly: an anniversary of a date of an earlier year, the time of an ISO timestamp ignored', () => {
    const match = matchAt(trigger(), '2026-11-27T10:00:00Z');
    expect(match).toEqual({ today: '2026-11-27', repeat: 'yearly', monthDays: ['11-27'], beforeYear: 2026 });
    expect(occursToday(match, '1990-11-27')).toBe(true);
    expect(occursToday(match, '2025-11-27T22:15:00-05:00')).toBe(true);
    expect(occursToday(match, '2025-11-28')).toBe(false);
    // The date itself is not an anniversary; a date in a later year is not one yet.
    expect(occursToday(match, '2026-11-27')).toBe(false);
    expect(occursToday(match, '2027-11-27')).toBe(false);
  });

  it('once: the date itself only, in any year', () => {
    const match = matchAt(trigger({ repeat: 'once' }), '2026-11-27T10:00:00Z');
    expect(match).toEqual({ today: '2026-11-27', repeat: 'once', date: '2026-11-27' });
    expect(occursToday(match, '2026-11-27')).toBe(true);
    expect(occursToday(match, '2026-11-27T00:00:00Z')).toBe(true);
    expect(occursToday(match, '2025-11-27')).toBe(false);
  });

  it('an offset moves the occurrence: -3 fires three days before, +10 ten days after, across a year end', () => {
    const before = matchAt(trigger({ offset_days: -3 }), '2026-11-27T10:00:00Z');
    expect(occursToday(before, '1990-11-30')).toBe(true);
    expect(occursToday(before, '1990-11-27')).toBe(false);
    const after = matchAt(trigger({ offset_days: 10, repeat: 'once' }), '2027-01-05T10:00:00Z');
    expect(after).toMatchObject({ date: '2026-12-26' });
    expect(occursToday(after, '2026-12-26')).toBe(true);
    // A yearly anniversary 3 days ahead in the next year is one of a year before that one.
    const newYear = matchAt(trigger({ offset_days: -3 }), '2026-12-30T10:00:00Z');
    expect(newYear).toMatchObject({ monthDays: ['01-02'], beforeYear: 2027 });
    expect(occursToday(newYear, '2026-01-02')).toBe(true);
    expect(addDays('2026-11-27', -365)).toBe('2025-11-27');
    expect(addDays('2028-03-01', -1)).toBe('2028-02-29');
  });

  it('Feb 29 falls on Feb 28 in other years, on Feb 29 in leap years, and a Feb 29 that never was is no date', () => {
    const common = matchAt(trigger(), '2027-02-28T10:00:00Z');
    expect(common.repeat === 'yearly' && common.monthDays).toEqual(['02-28', '02-29']);
    expect(occursToday(common, '2000-02-29')).toBe(true);
    expect(occursToday(common, '1990-02-28')).toBe(true);
    expect(occursToday(common, '2001-02-29')).toBe(false);
    expect(occursToday(matchAt(trigger(), '2027-03-01T10:00:00Z'), '2000-02-29')).toBe(false);
    const leap = matchAt(trigger(), '2028-02-28T10:00:00Z');
    expect(occursToday(leap, '2000-02-29')).toBe(false);
    expect(occursToday(matchAt(trigger(), '2028-02-29T10:00:00Z'), '2000-02-29')).toBe(true);
  });

  it('skips values that are no date', () => {
    const match = matchAt(trigger(), '2026-11-27T10:00:00Z');
    for (const value of [undefined, null, 19901127, '', 'soon', '27/11/1990', '1990-11-27x', '1990-1-27', '90-11-27']) {
      expect(occursToday(match, value)).toBe(false);
    }
  });
});

describe('the date trigger in each contact’s time zone', () => {
  const isZone = (zone: string) => zone !== 'Mars/Olympus';
  const at = (iso: string) => new Date(iso);

  it('accepts zone automation or contact and refuses anything else; without it the definition is as before', () => {
    const parsed = parse({ type: 'date', field: 'custom.birthday', repeat: 'yearly', zone: 'contact' });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    expect(parsed.definition.trigger).toEqual({
      type: 'date',
      field: 'custom.birthday',
      repeat: 'yearly',
      offset_days: 0,
      at: '09:00',
      zone: 'contact',
    });
    expect(parse({ type: 'date', field: 'created_at', repeat: 'once', zone: 'automation' }).ok).toBe(true);
    expect(problemsOf({ type: 'date', field: 'created_at', repeat: 'once', zone: 'utc' })).toEqual([
      { path: 'trigger.zone', message: 'must be automation or contact' },
    ]);
  });

  it('scans the automation zone’s day, or every day some zone is in (UTC-12 to UTC+14)', () => {
    expect(scanDays(trigger(), at('2026-11-27T23:30:00Z'), 'Asia/Tokyo')).toEqual(['2026-11-28']);
    // 09:00 UTC: 21:00 the day before at UTC-12, 23:00 at UTC+14.
    expect(scanDays(trigger({ zone: 'contact' }), at('2026-11-27T09:00:00Z'), 'UTC')).toEqual(['2026-11-26', '2026-11-27']);
    // 11:00 UTC: 23:00 on the 26th at UTC-12, 01:00 on the 28th at UTC+14.
    expect(scanDays(trigger({ zone: 'contact' }), at('2026-11-27T11:00:00Z'), 'UTC')).toEqual(['2026-11-26', '2026-11-27', '2026-11-28']);
  });

  it('keys the window: the date or month-day of each day moved by the offset; created_at a day either side (its UTC day)', () => {
    expect(windowKeys(trigger({ offset_days: -3 }), ['2026-11-27'])).toEqual(['custom.birthday|11-30']);
    expect(windowKeys(trigger({ repeat: 'once' }), ['2026-11-27', '2026-11-28'])).toEqual([
      'custom.birthday|2026-11-27',
      'custom.birthday|2026-11-28',
    ]);
    // Feb 28 of a common year also fires Feb 29 birthdays.
    expect(windowKeys(trigger(), ['2027-02-28'])).toEqual(['custom.birthday|02-28', 'custom.birthday|02-29']);
    expect(windowKeys(trigger({ field: 'created_at' }), ['2028-02-29'])).toEqual([
      'created_at|02-28',
      'created_at|02-29',
      'created_at|03-01',
    ]);
    expect(windowKeys(trigger({ field: 'created_at', repeat: 'once' }), ['2027-01-01'])).toEqual([
      'created_at|2026-12-31',
      'created_at|2027-01-01',
      'created_at|2027-01-02',
    ]);
  });

  it('fires each contact on its own local day from `at` there: UTC+14 and UTC-12 a day apart; an unknown zone takes the automation’s', () => {
    const t = trigger({ zone: 'contact' });
    const kiritimati = { value: '1990-06-15', createdAt: new Date(0), timezone: 'Pacific/Kiritimati' };
    const baker = { ...kiritimati, timezone: 'Etc/GMT+12' };
    const lost = { ...kiritimati, timezone: 'Mars/Olympus' };
    expect(contactFiresOn(t, at('2031-06-14T18:59:00Z'), 'UTC', kiritimati, isZone)).toBeNull();
    expect(contactFiresOn(t, at('2031-06-14T19:00:00Z'), 'UTC', kiritimati, isZone)).toBe('2031-06-15');
    expect(contactFiresOn(t, at('2031-06-15T09:59:00Z'), 'UTC', kiritimati, isZone)).toBe('2031-06-15');
    expect(contactFiresOn(t, at('2031-06-15T20:59:00Z'), 'UTC', baker, isZone)).toBeNull();
    expect(contactFiresOn(t, at('2031-06-15T21:00:00Z'), 'UTC', baker, isZone)).toBe('2031-06-15');
    expect(contactFiresOn(t, at('2031-06-16T11:59:00Z'), 'UTC', baker, isZone)).toBe('2031-06-15');
    expect(contactFiresOn(t, at('2031-06-16T12:00:00Z'), 'UTC', baker, isZone)).toBeNull();
    expect(contactFiresOn(t, at('2031-06-15T09:00:00Z'), 'UTC', lost, isZone)).toBe('2031-06-15');
    // Without zone: contact, the contact's zone is ignored.
    expect(contactFiresOn(trigger(), at('2031-06-14T19:00:00Z'), 'UTC', kiritimati, isZone)).toBeNull();
    // created_at is its day in the contact's zone: 20:00 UTC on the 14th is the 15th in Kiritimati.
    const signup = { value: null, createdAt: at('2029-06-14T20:00:00Z'), timezone: 'Pacific/Kiritimati' };
    expect(contactFiresOn(trigger({ zone: 'contact', field: 'created_at' }), at('2031-06-14T19:00:00Z'), 'UTC', signup, isZone)).toBe(
      '2031-06-15',
    );
    expect(contactFiresOn(trigger({ field: 'created_at' }), at('2031-06-14T19:00:00Z'), 'UTC', signup, isZone)).toBe('2031-06-14');
  });
});
