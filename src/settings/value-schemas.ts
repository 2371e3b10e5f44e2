import * as v from 'valibot';

/**
 * The shapes an environment variable's text can take (a port, a URL, a flag, a duration…),
 * each a valibot schema from the variable's text (undefined when unset) to its value. A
 * `fallback` is the text used when the variable is unset: it is the setting's default, and the
 * README shows it as such (src/settings/setting.ts).
 */

const DURATION_UNITS_MS = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;
const MAX_RETRY_STEP_MS = 7 * 86_400_000;
const MAX_RETRY_ATTEMPTS = 30;

function durationMs(match: RegExpExecArray): number {
  return Math.round(Number(match[1]) * DURATION_UNITS_MS[match[2] as keyof typeof DURATION_UNITS_MS]);
}

/**
 * Parses a retry schedule (`0s,5s,30s,2m,...`: one entry per attempt, each the delay after
 * the previous attempt, units ms/s/m/h/d) into milliseconds. The first entry is the first
 * attempt and must be 0 (deliveries start at once); at most 30 entries, each at most 7 days.
 * Returns the schedule or the problem found.
 */
export function parseRetrySchedule(text: string): number[] | string {
  const entries = text.split(',').map((entry) => entry.trim());
  if (entries.length > MAX_RETRY_ATTEMPTS) return `at most ${MAX_RETRY_ATTEMPTS} attempts`;
  const schedule: number[] = [];
  for (const entry of entries) {
    const match = DURATION.exec(entry);
    if (!match) return `"${entry}" is not a duration like 0s, 500ms, 5s, 2m, 1h or 1d`;
    const ms = durationMs(match);
    if (ms > MAX_RETRY_STEP_MS) return `"${entry}" is longer than 7 days`;
    schedule.push(ms);
  }
  if (schedule[0] !== 0) return 'the first entry is the first attempt and must be 0s';
  return schedule;
}

/** One duration (`72h`, `500ms`) in milliseconds, or the problem found. */
export function parseDuration(text: string): number | string {
  const match = DURATION.exec(text.trim());
  if (!match) return `"${text}" is not a duration like 500ms, 5s, 2m, 1h or 3d`;
  return durationMs(match);
}

/** Text that `check` accepts (it returns the problem as a string, or anything else), kept as text. */
export function checkedBy(check: (text: string) => unknown, fallback: string) {
  return v.pipe(
    v.optional(v.string(), fallback),
    v.rawCheck(({ dataset, addIssue }) => {
      const problem = dataset.typed ? check(dataset.value) : null;
      if (typeof problem === 'string') addIssue({ message: problem });
    }),
  );
}

/** A whole number from `min` to `max`. */
export const wholeNumber = (fallback: string, min: number, max: number) =>
  v.pipe(
    v.optional(v.string(), fallback),
    v.regex(/^\d+$/, 'must be a whole number'),
    v.transform(Number),
    v.minValue(min),
    v.maxValue(max),
  );

/** A whole number of concurrent items, 1 to 64. */
export const concurrency = (fallback: string) => wholeNumber(fallback, 1, 64);

/** A TCP port (`min` 0: any free one). */
export const port = (fallback: string, min = 0) =>
  v.pipe(
    v.optional(v.string(), fallback),
    v.regex(/^\d{1,5}$/, 'must be a port number'),
    v.transform(Number),
    v.minValue(min),
    v.maxValue(65535),
  );

/** A number of days from 1 to `max`, or `0` / `off` (kept forever, read as 0). */
export const daysOrOff = (fallback: string, max: number) =>
  v.pipe(
    v.optional(v.string(), fallback),
    v.regex(/^(\d+|off)$/, 'must be a whole number of days or off'),
    v.transform((value) => (value === 'off' ? 0 : Number(value))),
    v.maxValue(max),
  );

/** A port, or `off`; unset is left to the caller (its default depends on other settings). */
export const portOrOff = () => v.optional(v.pipe(v.string(), v.regex(/^(\d{1,5}|off)$/, 'must be a port number or off')));

export const url = (fallback: string) => v.pipe(v.optional(v.string(), fallback), v.url('must be a URL'));

/** A URL, or unset. */
export const optionalUrl = () => v.optional(v.pipe(v.string(), v.url('must be a URL')));

/**
 * On or off (`1/0`, `true/false`, `on/off`, `yes/no`). A flag that is off by default also
 * takes the empty string as off (`NAME=` in a .env file).
 */
export function flag(fallback: boolean) {
  const words = ['1', '0', 'true', 'false', 'on', 'off', 'yes', 'no'] as const;
  const choices: readonly (typeof words)[number][] | readonly ((typeof words)[number] | '')[] = fallback ? words : [...words, ''];
  return v.pipe(
    v.optional(v.picklist(choices, 'must be true or false (also 1/0, on/off, yes/no)'), fallback ? 'true' : 'false'),
    v.transform((value) => ['1', 'true', 'on', 'yes'].includes(value)),
  );
}

/** One of `choices` (the empty string, when one of them, is the same as unset). */
export const oneOf = <const T extends readonly [string, ...string[]]>(choices: T, fallback: T[number]) =>
  v.optional(v.picklist(choices, `must be one of ${choices.filter(Boolean).join(', ')}`), fallback);

/** A DNS host name, lower-cased; `dotted`: at least two labels. */
export const hostName = (dotted: boolean) =>
  v.pipe(
    v.string(),
    v.trim(),
    v.toLowerCase(),
    v.regex(dotted ? /^[a-z0-9_-]+(\.[a-z0-9_-]+)+$/ : /^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/, 'must be a host name'),
  );

/** Free text (a path, an address, a name). */
export const text = (fallback: string) => v.optional(v.string(), fallback);

/** Free text, or unset. */
export const optionalText = () => v.optional(v.string());

/** A 32-byte key, base64-encoded, or unset. */
export const encryptionKey = () =>
  v.optional(
    v.pipe(
      v.string(),
      v.check((value) => Buffer.from(value, 'base64').length === 32, 'must be 32 bytes, base64-encoded (openssl rand -base64 32)'),
    ),
  );

/** Comma-separated 32-byte keys, base64-encoded; empty when none. */
export const encryptionKeyList = () =>
  v.optional(
    v.pipe(
      v.string(),
      v.check(
        (value) =>
          value
            .split(',')
            .map((entry) => entry.trim())
            .filter(Boolean)
            .every((entry) => Buffer.from(entry, 'base64').length === 32),
        'must be comma-separated keys of 32 bytes, base64-encoded (openssl rand -base64 32)',
      ),
    ),
    '',
  );
