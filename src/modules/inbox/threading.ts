import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { InboxMessage, InboxThread } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';

/**
 * Threading of inbox messages (inbound and outbound), per workspace:
 *   1. In-Reply-To, then References (newest first), against the rfc_message_id of messages
 *      already in the workspace: the message joins that message's thread (and records it as
 *      the message it replies to);
 *   2. else the normalised subject plus a shared participant, with a thread active within
 *      SUBJECT_THREAD_WINDOW_MS;
 *   3. else a new thread.
 * The pure rules come first (unit-tested); `threadMessage` applies them to the database.
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

function domainOf(email: string): string {
  return email.slice(email.lastIndexOf('@') + 1);
}

/**
 * Whether two messages share a participant other than the workspace itself: addresses on the
 * workspace's own domains are on nearly every message, so they alone do not make two messages
 * with the same subject one conversation. When neither side has an outside address (internal
 * mail), the own addresses count.
 */
export function participantsOverlap(a: readonly string[], b: readonly string[], ownDomains: readonly string[]): boolean {
  const own = new Set(ownDomains.map((domain) => domain.toLowerCase()));
  const outside = (list: readonly string[]) => list.filter((email) => !own.has(domainOf(email)));
  const [outsideA, outsideB] = [outside(a), outside(b)];
  const [left, right] = outsideA.length > 0 && outsideB.length > 0 ? [outsideA, outsideB] : [a, b];
  const set = new Set(right);
  return left.some((email) => set.has(email));
}

/** Whether a thread last active at `lastMessageAt` may take a subject-matched message dated `at`. */
export function withinSubjectWindow(lastMessageAt: Date, at: Date, windowMs = SUBJECT_THREAD_WINDOW_MS): boolean {
  return at.getTime() - lastMessageAt.getTime() <= windowMs;
}

export interface ThreadingInput {
  subject: string;
  inReplyTo: string | null;
  references: readonly string[];
  /** Lower-cased addresses of the message (from, to, cc). */
  participants: readonly string[];
  at: Date;
}

export interface ThreadPlacement {
  thread: InboxThread;
  /** The message this one replies to, when found in the workspace. */
  parent: InboxMessage | null;
}

/**
 * Serialises threading of messages with the same normalised subject and participants in one
 * workspace until the caller's transaction ends, so two messages of one new conversation
 * arriving together do not open two threads. Other messages thread concurrently: a
 * workspace-wide lock would make every send of a workspace wait for the one before it (a
 * receipt sent to a thousand customers has one subject but a thousand conversations). The
 * thread row itself is locked when a message joins it (see threadMessage), so its counters
 * stay exact.
 */
export async function lockWorkspaceThreads(em: EntityManager, orgId: string, message: { subject: string; participants: readonly string[] }): Promise<void> {
  const key = [orgId, normalizeSubject(message.subject).slice(0, 200), ...participantsOf(message.participants).sort()].join('\n');
  await em.execute(`select pg_advisory_xact_lock(hashtextextended(?, 0))`, [`inbox-threads:${key}`]);
}

async function findByMessageIds(em: EntityManager, candidates: string[]): Promise<{ thread: InboxThread; parent: InboxMessage } | null> {
  if (candidates.length === 0) return null;
  const found = await em.find(InboxMessage, { rfcMessageId: { $in: candidates } }, { orderBy: { createdAt: 'asc' } });
  for (const id of candidates) {
    const parent = found.find((message) => message.rfcMessageId === id);
    if (!parent) continue;
    const thread = await em.findOne(InboxThread, { id: parent.threadId });
    if (thread) return { thread, parent };
  }
  return null;
}

/**
 * The most recent thread of the workspace with this subject inside the subject window whose
 * participants overlap the message's; one raw statement (thread ids and participants, the
 * workspace's own domains alongside) instead of hydrating the candidates: a receipt sent to
 * a thousand customers has one subject, so every send of it looks at the same candidates.
 */
async function findBySubject(em: EntityManager, orgId: string, input: ThreadingInput, normalized: string): Promise<{ id: string } | null> {
  if (normalized === '') return null;
  const since = new Date(input.at.getTime() - SUBJECT_THREAD_WINDOW_MS);
  const candidates = await em.execute<{ id: string; participants: string[]; own_domains: string[] }[]>(
    `select t.id, t.participants, array(select d.domain from domains d where d.org_id = ?) as own_domains
       from inbox_threads t
      where t.org_id = ? and t.normalized_subject = ? and t.last_message_at >= ?::timestamptz
      order by t.last_message_at desc limit 20`,
    [orgId, orgId, normalized, since.toISOString()],
  );
  return candidates.find((thread) => participantsOverlap(thread.participants, input.participants, thread.own_domains)) ?? null;
}

/**
 * Finds (or creates) the thread of a new message in the workspace of `em` (a scoped fork, in
 * the caller's transaction, after lockWorkspaceThreads) and counts the message in it:
 * participants, message_count, last_message_at and updated_at move on.
 */
export async function threadMessage(em: EntityManager, orgId: string, input: ThreadingInput): Promise<ThreadPlacement> {
  const normalized = normalizeSubject(input.subject).slice(0, 998);
  const byId = await findByMessageIds(em, replyCandidates(input.inReplyTo, input.references));
  const found = byId?.thread ?? (await findBySubject(em, orgId, input, normalized));
  // Another message may be joining the same thread now: take its row lock and fresh counters.
  const locked = found ? await em.findOne(InboxThread, { id: found.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }) : null;
  const thread =
    locked ??
    em.create(InboxThread, {
      id: newId(),
      orgId,
      subject: input.subject.slice(0, 998),
      normalizedSubject: normalized,
      participants: [],
      messageCount: 0,
      lastMessageAt: input.at,
    });
  thread.participants = participantsOf([...thread.participants, ...input.participants]);
  thread.messageCount += 1;
  if (input.at > thread.lastMessageAt) thread.lastMessageAt = input.at;
  thread.updatedAt = new Date();
  return { thread, parent: byId?.parent ?? null };
}
