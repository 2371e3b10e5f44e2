/**
 * The statements of the transaction that records a raw message's inbox message in one
 * workspace (record-inbox-message.ts): two round trips where the ORM took six.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { InboxMessageKind, MailboxAddress } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { executePrepared } from '../../../db/prepared.ts';
import { API_VERSION } from '../events/events.fns.ts';
import { threadPlacementCtes } from '../inbox/thread-placement.repo.ts';
import { THREAD_LOCK_SQL, threadLockKey, type ThreadingInput } from '../inbox/threading.ts';
import type { AuthResultsSummary } from './auth-results.ts';
import { MARK_INGESTED_SQL } from './inbound-queue.repo.ts';

export interface BeginRecording {
  inboundId: string;
  orgId: string;
  /** The message's normalised subject and participants: its conversation's thread lock (lockWorkspaceThreads). */
  thread: { subject: string; participants: readonly string[] };
  /** This transaction is the raw message's last step: mark it ingested in it. */
  settlesRaw: boolean;
}

/**
 * Marks the raw message ingested when `settlesRaw`, takes the conversation's thread lock until
 * the transaction ends (as src/modules/inbox/thread-placement.repo.ts lockWorkspaceThreads),
 * and answers the id of the inbox message an earlier attempt recorded in this workspace, if any.
 */
export async function beginRecording(em: EntityManager, input: BeginRecording): Promise<string | null> {
  const [row] = await em.execute<{ existing_id: string | null }[]>(
    `with settled as (${MARK_INGESTED_SQL} where id = :inboundId and :settlesRaw)
     select ${THREAD_LOCK_SQL},
            (select id from inbox_messages where org_id = :orgId and inbound_id = :inboundId) as existing_id`,
    {
      inboundId: input.inboundId,
      orgId: input.orgId,
      settlesRaw: input.settlesRaw,
      threadLock: threadLockKey(input.orgId, input.thread),
    },
  );
  return row?.existing_id ?? null;
}

/** An inbound inbox message as recordForWorkspace writes it (columns as in db/entities/inbox.ts). */
export interface NewInboundMessage {
  id: string;
  orgId: string;
  inboundId: string;
  kind: InboxMessageKind;
  subject: string;
  text: string;
  html: string | null;
  fromEmail: string;
  fromName: string;
  to: readonly MailboxAddress[];
  cc: readonly MailboxAddress[];
  rfcMessageId: string | null;
  inReplyTo: string | null;
  references: readonly string[];
  attachmentCount: number;
  authResults: AuthResultsSummary;
  sentAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * Writes an inbound inbox message in one statement, in the caller's transaction (after
 * beginRecording took the thread lock): placed in its thread (thread-placement.repo.ts, an
 * archived thread reopened), `pending` until its attachments are stored (`ready` without any),
 * and with `event` (the `email.received` data, its `message.thread_id` filled in here) when
 * given. Answers the thread.
 */
export async function insertInboundMessage(
  em: EntityManager,
  message: NewInboundMessage,
  thread: ThreadingInput,
  event: { type: string; data: Record<string, unknown> } | null,
): Promise<{ threadId: string }> {
  const placement = threadPlacementCtes(message.orgId, thread, { reopen: true });
  const ready = message.attachmentCount === 0;
  const eventSql = event
    ? `,
    r_event as (
      insert into events (id, org_id, type, api_version, data, created_at)
      select :evId, :mOrg, :evType, :evVersion, jsonb_set(:evData::jsonb, '{message,thread_id}', to_jsonb(t.id::text)), :mNow::timestamptz
        from tp_thread t
      returning id
    )`
    : '';
  const [row] = await executePrepared<{ thread_id: string }>(em, {
    sql: `with ${placement.sql},
    r_message as (
      insert into inbox_messages (id, org_id, thread_id, direction, kind, inbound_id, email_id, subject, text, html, from_email, from_name, "to", cc,
                                  rfc_message_id, in_reply_to, "references", in_reply_to_id, attachment_ingest_status, failed_attachments,
                                  attachment_count, attachments_ready, auth_results, sent_at, created_at, updated_at)
      select :mId, :mOrg, t.id, 'inbound', :mKind, :mInbound, null, :mSubject, :mText, :mHtml, :mFromEmail, :mFromName, :mTo::jsonb, :mCc::jsonb,
             :mRfc, :mInReplyTo, :mReferences::text[], t.parent_id, :mStatus, '[]'::jsonb,
             :mAttachments::int, :mReady::boolean, :mAuth::jsonb, :mSentAt::timestamptz, :mAt::timestamptz, :mNow::timestamptz
        from tp_thread t
      returning thread_id
    )${eventSql}
    select thread_id from r_message`,
    params: {
      ...placement.params,
      mId: message.id,
      mOrg: message.orgId,
      mKind: message.kind,
      mInbound: message.inboundId,
      mSubject: message.subject,
      mText: message.text,
      mHtml: message.html,
      mFromEmail: message.fromEmail,
      mFromName: message.fromName,
      mTo: JSON.stringify(message.to),
      mCc: JSON.stringify(message.cc),
      mRfc: message.rfcMessageId,
      mInReplyTo: message.inReplyTo,
      mReferences: message.references,
      mStatus: ready ? 'ready' : 'pending',
      mAttachments: message.attachmentCount,
      mReady: ready,
      mAuth: JSON.stringify(message.authResults),
      mSentAt: message.sentAt,
      mAt: message.createdAt,
      mNow: message.updatedAt,
      ...(event ? { evId: newId(), evType: event.type, evVersion: API_VERSION, evData: JSON.stringify(event.data) } : {}),
    },
  });
  if (!row?.thread_id) throw new Error(`inbound message ${message.inboundId} could not be placed in workspace ${message.orgId}`);
  return { threadId: row.thread_id };
}
