/**
 * Threading of inbox messages (inbound and outbound), per workspace:
 *   1. In-Reply-To, then References (newest first), against the rfc_message_id of messages
 *      already in the workspace: the message joins that message's thread (and records it as
 *      the message it replies to);
 *   2. else the normalised subject plus a shared participant, with a thread active within
 *      SUBJECT_THREAD_WINDOW_MS;
 *   3. else a new thread.
 * The pure parts are here (unit-tested); thread-placement.repo.ts applies the rules in SQL.
 * docs/inbound.md describes them for users.
 */

/** How far back a subject match may reach: a thread whose last message is older starts anew. */
export const SUBJECT_THREAD_WINDOW_MS = 30 * 86_400_000;

/**
 * Reply and forward prefixes in the languages mail clients commonly write: Re, Fwd, Fw, AW
 * (German), SV (Nordic), Antw (Dutch), WG (German forward), TR (French forward), RIF/I (Italian),
 * VS (Finnish), Odp (Polish), RV (Spanish forward), Enc (Portuguese forward), Ynt (Turkish),
 * R (Outlook short form). Each may carry a counter (`Re[2]:`, `Re(3):`) and full-width colons.
 */
const PREFIX = /^\s*(?:re|fwd?|aw|sv|antw|wg|tr|rif|vs|odp|rv|enc|ynt|r|i)\s*(?:\[\d+\]|\(\d+\))?\s*[:：]\s*/i;
/** A bracketed tag such as `[ext]`, `[EXTERNAL]` or `[list-name]` at the start. */
const TAG = /^\s*\[[^\]]{0,64}\]\s*/;
/** `(fwd)` at the end, as some older clients write it. */
const TRAILING_FWD = /\s*\((?:fwd|fw)\)\s*$/i;

/**
 * A subject without reply/forward prefixes and leading bracket tags (repeated, in any order),
 * whitespace collapsed and lower-cased: `Re: [ext] AW: Fwd: Hello  World` → `hello world`.
 */
export function normalizeSubject(subject: string): string {
  let rest = subject.replace(/\s+/g, ' ').trim();
  for (;;) {
    const next = rest.replace(PREFIX, '').replace(TAG, '').replace(TRAILING_FWD, '');
    if (next === rest) break;
    rest = next;
  }
  return rest.trim().toLowerCase();
}

/** A Message-ID as Herald stores it: without angle brackets or surrounding whitespace. */
export function bareMessageId(value: string): string {
  return value.trim().replace(/^<+/, '').replace(/>+$/, '').trim();
}

/**
 * The Message-IDs in an In-Reply-To or References value (`<a@x> <b@y>`, comma or whitespace
 * separated, brackets optional), bare, de-duplicated, in order. Values longer than 998
 * characters (the line limit) are dropped.
 */
export function parseMessageIdList(value: string | string[] | null | undefined): string[] {
  if (!value) return [];
  const text = Array.isArray(value) ? value.join(' ') : value;
  const bracketed = text.match(/<[^<>]+>/g);
  const tokens = bracketed ?? text.split(/[\s,]+/);
  const ids: string[] = [];
  for (const token of tokens) {
    const id = bareMessageId(token);
    if (id.length > 0 && id.length <= 998 && !/\s/.test(id) && !ids.includes(id)) ids.push(id);
  }
  return ids;
}

/**
 * The Message-IDs to look for, most specific first: In-Reply-To, then References from the
 * newest (last) to the oldest.
 */
export function replyCandidates(inReplyTo: string | null, references: readonly string[]): string[] {
  const ordered = [...(inReplyTo ? [inReplyTo] : []), ...[...references].reverse()];
  return [...new Set(ordered)];
}

/** Lower-cased, de-duplicated addresses. */
export function participantsOf(addresses: readonly (string | null | undefined)[]): string[] {
  const seen = new Set<string>();
  for (const address of addresses) {
    const email = address?.trim().toLowerCase();
    if (email) seen.add(email);
  }
  return [...seen];
}

export interface ThreadingInput {
  subject: string;
  inReplyTo: string | null;
  references: readonly string[];
  /** Lower-cased addresses of the message (from, to, cc). */
  participants: readonly string[];
  at: Date;
}

/** The advisory lock of lockWorkspaceThreads (thread-placement.repo.ts) as a select-list expression (`:threadLock` = threadLockKey), for a statement that takes it alongside its reads. */
export const THREAD_LOCK_SQL = 'pg_advisory_xact_lock(hashtextextended(:threadLock, 0)) is null as thread_locked';

/** The key lockWorkspaceThreads locks for a message: workspace, normalised subject and sorted participants. */
export function threadLockKey(orgId: string, message: { subject: string; participants: readonly string[] }): string {
  return ['inbox-threads:' + orgId, normalizeSubject(message.subject).slice(0, 200), ...participantsOf(message.participants).sort()].join(
    '\n',
  );
}
