/**
 * The group commit's write of accepted attempts (sent-recorder.ts): one statement for a whole
 * group (the recipient rows, the email rows settling as sent, the email_events rows with their
 * daily rollup, and the email.sent / email.delivered events of subscribed workspaces). Its
 * values are bound as one array per column (`unnest`), so the text is the same whatever the
 * group's size (two shapes: with and without events) and it runs as a prepared statement
 * (db/prepared.ts queryPrepared) instead of MikroORM inlining every value of every row. Raw SQL
 * is outside the tenant filter: every row is matched on its id and its workspace.
 */
import { arrayLiteral } from '../../../db/prepared.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import { API_VERSION } from '../events/events.fns.ts';

/**
 * Why a claimed email's recipients are looked up by its id alone: the email row is the
 * workspace's, and so are its recipients. With the workspace's condition as well, PostgreSQL
 * without fresh statistics (right after an audience of 100,000 was written, before autovacuum
 * analyzed it) combined the unique (email_id, email) index with a scan of every recipient row
 * of the workspace: 6 ms per claimed email at 100,000.
 */
export const BY_EMAIL_ID = 'recipients reached through their email, whose workspace the statement names';

/** One recipient of an accepted attempt, with what its rows will hold if it was still pending. */
export interface SentRecipientRow {
  id: string;
  orgId: string;
  emailId: string;
  status: 'sent' | 'delivered';
  /** The relay's answer, at most 1,024 characters. */
  response: string | null;
  /** When the relay accepted it (ISO 8601) and its UTC day (YYYY-MM-DD, the rollup's). */
  at: string;
  day: string;
  /** The address, the sending domain (lower case) and the broadcast, as email_events records them. */
  recipient: string;
  domain: string;
  broadcastId: string | null;
  /** The ids of its email_events rows (sent; delivered, used only when status is delivered). */
  sentFactId: string;
  deliveredFactId: string;
  /** The email.sent / email.delivered events' ids and data (JSON), null where no endpoint subscribes. */
  sentEventId: string | null;
  sentEventData: string | null;
  deliveredEventId: string | null;
  deliveredEventData: string | null;
}

/** One email of an accepted attempt and when it was accepted (ISO 8601). */
export interface SentEmailRow {
  id: string;
  orgId: string;
  at: string;
}

const RECIPIENT_COLUMNS: readonly [string, string, (r: SentRecipientRow) => string | null][] = [
  ['recipientIds', 'text', (r) => r.id],
  ['orgIds', 'text', (r) => r.orgId],
  ['emailIds', 'text', (r) => r.emailId],
  ['statuses', 'text', (r) => r.status],
  ['responses', 'text', (r) => r.response],
  ['ats', 'timestamptz', (r) => r.at],
  ['days', 'date', (r) => r.day],
  ['recipients', 'text', (r) => r.recipient],
  ['domains', 'text', (r) => r.domain],
  ['broadcastIds', 'text', (r) => r.broadcastId],
  ['sentFactIds', 'text', (r) => r.sentFactId],
  ['deliveredFactIds', 'text', (r) => r.deliveredFactId],
];
const EVENT_COLUMNS: typeof RECIPIENT_COLUMNS = [
  ['sentEventIds', 'text', (r) => r.sentEventId],
  ['sentEventData', 'text', (r) => r.sentEventData],
  ['deliveredEventIds', 'text', (r) => r.deliveredEventId],
  ['deliveredEventData', 'text', (r) => r.deliveredEventData],
];
const EMAIL_COLUMNS: readonly [string, string, (r: SentEmailRow) => string][] = [
  ['settleIds', 'text', (r) => r.id],
  ['settleOrgIds', 'text', (r) => r.orgId],
  ['settleAts', 'timestamptz', (r) => r.at],
];

const unnest = (columns: readonly (readonly [string, string, unknown])[], alias: string) =>
  `unnest(${columns.map(([name, type]) => `:${name}::${type}[]`).join(', ')}) as ${alias}`;

/**
 * The statement that records a group of accepted attempts: it writes `status` (sent or
 * delivered), the answer and the send time to the recipient rows still queued or deferred; for
 * the rows it changed, the email_events rows (sent, and delivered where delivered) and their
 * rollup increments (upserted in a fixed order, so concurrent groups lock the counter rows in the
 * same order), and the subscribed events; and settles as sent the emails still sending that have
 * no recipient left queued or deferred. Every part of one statement sees the rows as they were
 * before it, so the settling counts the recipients it changes as no longer pending.
 */
export function sentRecordsStatement(recipients: readonly SentRecipientRow[], emails: readonly SentEmailRow[]): SqlFragment {
  const withEvents = recipients.some((r) => r.sentEventId !== null || r.deliveredEventId !== null);
  const columns = withEvents ? [...RECIPIENT_COLUMNS, ...EVENT_COLUMNS] : RECIPIENT_COLUMNS;
  const params: Record<string, string> = {};
  for (const [name, , value] of columns) params[name] = arrayLiteral(recipients.map(value));
  for (const [name, , value] of EMAIL_COLUMNS) params[name] = arrayLiteral(emails.map(value));
  if (withEvents) params.apiVersion = API_VERSION;
  const eventNames = withEvents ? ', sent_event_id, sent_event_data, delivered_event_id, delivered_event_data' : '';
  return {
    sql: `with v as (
       select * from ${unnest(columns, `u (id, org_id, email_id, status, response, at, day, recipient, domain, broadcast_id, sent_fact_id, delivered_fact_id${eventNames})`)}
     ), changed as (
       update email_recipients r
          set status = v.status, sent_at = v.at, last_response = v.response, next_attempt_at = null,
              attempts = r.attempts + 1, updated_at = now()
         from v
        where r.id = v.id and r.org_id = v.org_id and r.status in ('queued', 'deferred')
       returning r.id
     ), facts as (
       select f.id, v.org_id, f.type, v.email_id, v.broadcast_id, v.recipient, v.domain, v.at, v.day
         from v join changed c on c.id = v.id
        cross join lateral (values (v.sent_fact_id, 'sent'), (v.delivered_fact_id, 'delivered')) f (id, type)
        where f.type = 'sent' or v.status = 'delivered'
     ), recorded as (
       insert into email_events (id, org_id, type, email_id, broadcast_id, recipient, domain, occurred_at, created_at)
       select id, org_id, type, email_id, broadcast_id, recipient, domain, at, now() from facts
     ), counted as (
       insert into email_event_counts (org_id, day, broadcast_id, domain, type, count)
       select org_id, day, coalesce(broadcast_id, ''), domain, type, count(*) from facts
        group by org_id, day, coalesce(broadcast_id, ''), domain, type
        order by org_id collate "C", day, coalesce(broadcast_id, '') collate "C", domain collate "C", type collate "C"
       on conflict (org_id, day, broadcast_id, domain, type) do update set count = email_event_counts.count + excluded.count
     )${
       withEvents
         ? `, published as (
       insert into events (id, org_id, type, api_version, data, created_at)
       select e.id, v.org_id, e.type, :apiVersion, e.data::jsonb, now()
         from v join changed c on c.id = v.id
        cross join lateral (values (v.sent_event_id, 'email.sent', v.sent_event_data),
                                   (v.delivered_event_id, 'email.delivered', v.delivered_event_data)) e (id, type, data)
        where e.id is not null
     )`
         : ''
     }
     update transactional_emails e
        set status = 'sent', sent_at = coalesce(e.sent_at, s.at), settled_at = s.at, next_attempt_at = null, updated_at = now()
       from ${unnest(EMAIL_COLUMNS, 's (id, org_id, at)')}
      where e.id = s.id and e.org_id = s.org_id and e.status = 'sending'
        and not exists (select 1 from email_recipients r
                         where r.email_id = e.id /* workspace: ${BY_EMAIL_ID} */ and r.status in ('queued', 'deferred')
                           and r.id not in (select id from changed))`,
    params,
  };
}
