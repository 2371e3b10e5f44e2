/**
 * The transactional send queue: transactional_emails rows of one sending domain, due at
 * `next_attempt_at` (acceptance, `scheduled_at`, a deferral's retry time, or the lapse of an
 * attempt's lease), claimed by the domain actor's drain with `FOR UPDATE SKIP LOCKED`; and the
 * domain's drain lease. Raw SQL is outside the tenant filter, so every statement names the
 * workspace itself.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { EmailAttachmentRecord } from '../../../db/entities/index.ts';
import type { ClaimedSend, SendRecipient } from './delivery.ts';

const OPEN = `status in ('scheduled', 'queued', 'sending')`;

/** A claimed email: the attempt's input (status sending, this attempt counted) and its place on the queue. */
export interface ClaimedEmail extends ClaimedSend {
  /** When the first attempt began (this claim's time for a first attempt), epoch ms. */
  firstAttemptMs: number;
  /** When it fell due (acceptance, scheduled_at, a retry time), epoch ms. */
  dueMs: number;
}

interface ClaimedRow {
  id: string;
  org_id: string;
  domain_id: string;
  domain: string;
  from_email: string;
  from_name: string | null;
  reply_to: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: EmailAttachmentRecord[];
  message_id: string;
  scheduled_ms: number | null;
  created_ms: number;
  handoff_attempts: number;
  first_attempt_ms: number;
  due_ms: number;
  recipients: SendRecipient[];
}

function toClaimed(row: ClaimedRow): ClaimedEmail {
  return {
    id: row.id,
    orgId: row.org_id,
    domainId: row.domain_id,
    domain: row.domain,
    fromEmail: row.from_email,
    fromName: row.from_name,
    replyTo: row.reply_to,
    subject: row.subject,
    html: row.html,
    text: row.text,
    headers: row.headers,
    attachments: row.attachments,
    messageId: row.message_id,
    scheduledAt: row.scheduled_ms === null ? null : new Date(row.scheduled_ms),
    createdAt: new Date(row.created_ms),
    handoffAttempts: row.handoff_attempts,
    recipients: row.recipients,
    firstAttemptMs: row.first_attempt_ms,
    dueMs: row.due_ms,
  };
}

export function createDomainQueue(orm: MikroORM) {
  const db = () => orm.em.getConnection();

  return {
    /** Marks the domain's drain as running until `seconds` from now; false when the domain is gone. */
    async leaseDomain(orgId: string, domainId: string, seconds: number): Promise<boolean> {
      const rows = await db().execute<{ id: string }[]>(
        `update domains set drain_lease_until = now() + make_interval(secs => ?) where id = ? and org_id = ? returning id`,
        [seconds, domainId, orgId],
      );
      return rows.length > 0;
    },

    async releaseDomain(orgId: string, domainId: string): Promise<void> {
      await db().execute(`update domains set drain_lease_until = null where id = ? and org_id = ?`, [domainId, orgId], 'run');
    },

    /**
     * Claims up to `limit` due emails (oldest due first) and starts an attempt on each (status
     * sending, the attempt counted), returning what the attempt needs, recipients included, in
     * one statement. Each becomes due again at the end of its lease unless the attempt records
     * a new time, so a dead worker's email is taken again.
     */
    async claim(orgId: string, domainId: string, limit: number, leaseSeconds: number): Promise<ClaimedEmail[]> {
      const rows = await db().execute<ClaimedRow[]>(
        `update transactional_emails e
            set next_attempt_at = now() + make_interval(secs => ?), first_attempt_at = coalesce(e.first_attempt_at, now()),
                status = 'sending', handoff_attempts = e.handoff_attempts + 1, updated_at = now()
           from (select id, next_attempt_at as due_at from transactional_emails
                  where domain_id = ? and org_id = ? and ${OPEN} and next_attempt_at <= now()
                  order by next_attempt_at, id
                  limit ? for update skip locked) due
          where e.id = due.id
         returning e.id, e.org_id, e.domain_id, e.domain, e.from_email, e.from_name, e.reply_to, e.subject, e.html, e.text,
                   e.headers, e.attachments, e.message_id, e.handoff_attempts,
                   (extract(epoch from e.scheduled_at) * 1000)::float8 as scheduled_ms,
                   (extract(epoch from e.created_at) * 1000)::float8 as created_ms,
                   (extract(epoch from e.first_attempt_at) * 1000)::float8 as first_attempt_ms,
                   (extract(epoch from due.due_at) * 1000)::float8 as due_ms,
                   (select json_agg(json_build_object('id', r.id, 'email', r.email, 'kind', r.kind, 'status', r.status) order by r.id)
                      from email_recipients r where r.email_id = e.id and r.org_id = e.org_id) as recipients`,
        [leaseSeconds, domainId, orgId, limit],
      );
      return rows.map(toClaimed);
    },

    /**
     * Extends the leases of the emails whose attempts are still running. Rows locked at this
     * moment are being settled (the sent recorder's group commit updates many of them in one
     * statement, in its own order): they are skipped rather than waited for, so the two never
     * deadlock; a settled email needs no lease, and one that is not is extended at the next beat.
     */
    async extendLeases(orgId: string, ids: readonly string[], leaseSeconds: number): Promise<void> {
      if (ids.length === 0) return;
      await db().execute(
        `update transactional_emails set next_attempt_at = now() + make_interval(secs => ?)
          where id in (select id from transactional_emails where id in (?) and org_id = ? and ${OPEN} for update skip locked)`,
        [leaseSeconds, [...ids], orgId],
        'run',
      );
    },

    /** After an attempt: due again at `at` (deferred recipients remain), or off the queue (null: settled). */
    async reschedule(orgId: string, id: string, at: Date | null): Promise<void> {
      await db().execute(
        `update transactional_emails set next_attempt_at = ? where id = ? and org_id = ?`,
        [at, id, orgId],
        'run',
      );
    },

    /** Epoch ms when the domain's next open email falls due, or null. */
    async nextDue(orgId: string, domainId: string): Promise<number | null> {
      const [row] = await db().execute<{ next_due_ms: number | null }[]>(
        `select (extract(epoch from min(next_attempt_at)) * 1000)::float8 as next_due_ms
           from transactional_emails where domain_id = ? and org_id = ? and ${OPEN}`,
        [domainId, orgId],
      );
      return row?.next_due_ms ?? null;
    },

    /** The domain's open emails and when the next one falls due. */
    async state(orgId: string, domainId: string): Promise<{ next_due_ms: number | null; open: number }> {
      const [row] = await db().execute<{ next_due_ms: number | null; open: number }[]>(
        `select (extract(epoch from min(next_attempt_at)) * 1000)::float8 as next_due_ms, count(*)::int as open
           from transactional_emails where domain_id = ? and org_id = ? and ${OPEN}`,
        [domainId, orgId],
      );
      return row ?? { next_due_ms: null, open: 0 };
    },

    /** Domains with emails due for longer than `marginMs` and no drain running (the reconciler's look). */
    async findStranded(marginMs: number, limit: number): Promise<{ id: string; org_id: string }[]> {
      return db().execute<{ id: string; org_id: string }[]>(
        `select s.domain_id as id, s.org_id
           from (select distinct domain_id, org_id from transactional_emails
                  where ${OPEN} and next_attempt_at < now() - make_interval(secs => ?)) s
           join domains d on d.id = s.domain_id and d.org_id = s.org_id
          where d.drain_lease_until is null or d.drain_lease_until < now()
          order by s.domain_id
          limit ?`,
        [marginMs / 1000, limit],
      );
    },
  };
}

export type DomainQueue = ReturnType<typeof createDomainQueue>;
