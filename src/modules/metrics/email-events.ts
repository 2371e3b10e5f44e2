import type { EntityManager } from '@mikro-orm/postgresql';
import { EmailEvent, type EmailEventType } from '../../../db/entities/index.ts';
import { addEventCounts, type CountIncrement } from './metrics.repo.ts';

/**
 * Writing delivery and engagement facts: each event row in email_events and, in the same
 * transaction, its increment of the daily rollup email_event_counts that GET /metrics reads.
 * The rollup equals `count(*)` of email_events grouped by (org, UTC day, broadcast or '',
 * domain, type) as long as events are only written through these functions.
 */

export interface EmailEventInput {
  orgId: string;
  type: EmailEventType;
  /** The recipient's address. */
  recipient: string;
  /** The sending domain the message went out from. */
  domain: string;
  emailId?: string | null;
  /** Set for messages of a broadcast; null for transactional email. */
  broadcastId?: string | null;
  /** When it happened; defaults to now. */
  occurredAt?: Date;
}

/** Rows per upsert statement: 6 parameters each stays far below PostgreSQL's 65,535. */
const UPSERT_CHUNK = 1000;

const compareIncrements = (a: CountIncrement, b: CountIncrement): number => {
  for (const key of ['orgId', 'day', 'broadcastId', 'domain', 'type'] as const) {
    if (a[key] !== b[key]) return a[key] < b[key] ? -1 : 1;
  }
  return 0;
};

/** The increments of `events`, one per rollup row, summed and in a fixed (sorted) order. */
function incrementsOf(events: readonly EmailEvent[]): CountIncrement[] {
  const byKey = new Map<string, CountIncrement>();
  for (const event of events) {
    const row = {
      orgId: event.orgId,
      day: event.occurredAt.toISOString().slice(0, 10),
      broadcastId: event.broadcastId ?? '',
      domain: event.domain,
      type: event.type,
    };
    const key = JSON.stringify([row.orgId, row.day, row.broadcastId, row.domain, row.type]);
    const found = byKey.get(key);
    if (found) found.count += 1;
    else byKey.set(key, { ...row, count: 1 });
  }
  return [...byKey.values()].sort(compareIncrements);
}

/**
 * Records delivery or engagement facts in the transaction of `em` (inside `em.transactional`;
 * it throws outside a transaction). The event rows join the unit of work (written at the
 * flush or commit); the rollup counters are upserted at once, one row per (org, UTC day,
 * broadcast, domain, type), in sorted order so that concurrent batches lock the counter rows
 * in the same order and cannot deadlock. Call it once per transaction with the whole batch,
 * as late as possible: the counter rows stay locked until the commit. GET /metrics counts
 * these events: the pipeline records each type at most once per recipient of an email (the
 * first open, the first click), so counts are unique recipients.
 */
export async function recordEmailEvents(em: EntityManager, inputs: readonly EmailEventInput[]): Promise<EmailEvent[]> {
  if (!em.isInTransaction()) throw new Error('recordEmailEvents must run inside a transaction (em.transactional)');
  const events = inputs.map((input) =>
    em.create(EmailEvent, {
      orgId: input.orgId,
      type: input.type,
      recipient: input.recipient,
      domain: input.domain.toLowerCase(),
      emailId: input.emailId ?? null,
      broadcastId: input.broadcastId ?? null,
      occurredAt: input.occurredAt ?? new Date(),
    }),
  );
  // The event rows first: only the counter upserts below (and the commit) hold the shared rows.
  await em.flush();
  const increments = incrementsOf(events);
  for (let start = 0; start < increments.length; start += UPSERT_CHUNK) {
    const chunk = increments.slice(start, start + UPSERT_CHUNK);
    await addEventCounts(em, chunk);
  }
  return events;
}

/** One fact; see recordEmailEvents (same transaction rules). */
export async function recordEmailEvent(em: EntityManager, input: EmailEventInput): Promise<EmailEvent> {
  const [event] = await recordEmailEvents(em, [input]);
  return event!;
}
