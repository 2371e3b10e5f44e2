import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailAttachmentRecord, EmailStatus, RecipientKind } from '../../../db/entities/index.ts';
import { executePrepared } from '../../../db/prepared.ts';
import type { SqlFragment } from '../../../db/sql-fragment.ts';
import type { TrackingChoice } from '../tracking/tracking.fns.ts';
import { threadPlacementCtes } from '../inbox/thread-placement.repo.ts';
import type { NewOutboundMessage } from '../inbox/outbound.ts';
import { chargeOf, quotaCtes, type CreditCharge, type QuotaRequest, type ReservationRow } from './quota.repo.ts';

/** The email row acceptance writes (the columns it sets; the others take their defaults). */
export interface NewEmail {
  id: string;
  orgId: string;
  apiKeyId: string | null;
  /** Accepted with a test key: delivered to the sandbox relay only. */
  sandbox: boolean;
  domainId: string;
  domain: string;
  fromEmail: string;
  fromName: string | null;
  replyTo: string | null;
  subject: string;
  html: string | null;
  text: string | null;
  headers: Record<string, string>;
  attachments: EmailAttachmentRecord[];
  templateId: string | null;
  templateVersion: number | null;
  tags: string[];
  /** Its message stream and that stream's kind. */
  stream: string;
  streamKind: string;
  /** Its open pixel and tracked links (decideTracking). */
  tracking: TrackingChoice;
  messageId: string;
  status: EmailStatus;
  scheduledAt: Date | null;
  nextAttemptAt: Date;
  sizeBytes: number;
  quotaDay: string;
  createdAt: Date;
}

export interface NewRecipient {
  id: string;
  kind: RecipientKind;
  email: string;
}

export interface Acceptance {
  email: NewEmail;
  recipients: NewRecipient[];
  message: NewOutboundMessage;
  quota: QuotaRequest;
  /** A CTE of another part written by the same statement (the idempotent answer). */
  answer?: SqlFragment;
}

/**
 * Writes an accepted send in one statement, inside the caller's transaction (after
 * openAcceptance took the thread lock): the outbound inbox message placed in its thread, the
 * credit and warm-up reservation (locking the hot workspace and domain rows last), the email
 * with its charge, its recipients, and optionally the idempotent answer; a NOTIFY to the domain's
 * drain rides along for an immediate send. Throws the quota's refusals (402, 429) and ShardShort
 * (redo with the `consolidate` credit mode): the caller's transaction then rolls everything back.
 */
export async function writeAcceptance(em: EntityManager, acceptance: Acceptance): Promise<CreditCharge> {
  const rows = await executePrepared<ReservationRow>(em, acceptanceStatement(acceptance));
  return chargeOf(rows[0], acceptance.quota);
}

/**
 * The statement of writeAcceptance. With `refuseInStatement` a refused reservation fails the
 * statement (quota.repo.ts refusalRow reads its figures back from the error) instead of
 * answering them, so that a COMMIT sent with it never runs.
 */
export function acceptanceStatement(acceptance: Acceptance, options: { refuseInStatement?: boolean } = {}): SqlFragment {
  const { email, recipients, message } = acceptance;
  const placement = threadPlacementCtes(email.orgId, message.thread);
  const quota = quotaCtes(acceptance.quota, 'tp_thread', options);
  const sql = `with ${placement.sql},
    ${quota.sql},
    a_email as (
      insert into transactional_emails (id, org_id, api_key_id, domain_id, domain, from_email, from_name, reply_to, subject, html, text,
                                        headers, attachments, template_id, template_version, tags, message_id, status, scheduled_at, next_attempt_at, size_bytes,
                                        credits_charged, overage_charged, quota_day, quota_shard, sandbox, stream, stream_kind, track_opens, track_clicks,
                                        created_at, updated_at)
      select :eId, :eOrg, :eKey, :eDomainId, :eDomain, :eFromEmail, :eFromName, :eReplyTo, :eSubject, :eHtml, :eText,
             :eHeaders::jsonb, :eAttachments::jsonb, :eTemplate, :eTemplateVersion::int, :eTags::text[], :eMessageId, :eStatus, :eScheduled::timestamptz, :eNext::timestamptz, :eSize,
             coalesce((select from_balance from q_charge), 0), :qCount - coalesce((select from_balance from q_charge), 0),
             :eDay, :qShard, :eSandbox::boolean, :eStream, :eStreamKind, :eTrackOpens::boolean, :eTrackClicks::boolean, :eAt::timestamptz, :eAt::timestamptz
      returning id
    ),
    a_recipients as (
      insert into email_recipients (id, org_id, email_id, kind, email, created_at, updated_at)
      select r.id, :eOrg, :eId, r.kind, r.email, :eAt::timestamptz, :eAt::timestamptz
        from unnest(:rIds::text[], :rKinds::text[], :rEmails::text[]) as r(id, kind, email)
      returning id
    ),
    a_message as (
      insert into inbox_messages (id, org_id, thread_id, direction, kind, email_id, subject, text, html, from_email, from_name, "to", cc,
                                  rfc_message_id, in_reply_to, "references", in_reply_to_id, attachment_ingest_status,
                                  attachment_count, attachments_ready, sent_at, read_at, created_at, updated_at)
      select :mId, :eOrg, t.id, 'outbound', 'message', :eId, :mSubject, :mText, :mHtml, :mFromEmail, :mFromName, :mTo::jsonb, :mCc::jsonb,
             :mRfc, :mInReplyTo, :mReferences::text[], t.parent_id, 'unavailable', :mAttachments, true,
             :eAt::timestamptz, :eAt::timestamptz, :eAt::timestamptz, now()
        from tp_thread t
      returning id
    )${acceptance.answer ? `,\n    ${acceptance.answer.sql}` : ''}
    select ${quota.columns}`;
  return {
    sql,
    params: {
      ...placement.params,
      ...quota.params,
      ...acceptance.answer?.params,
      eId: email.id,
      eOrg: email.orgId,
      eKey: email.apiKeyId,
      eSandbox: email.sandbox,
      eTrackOpens: email.tracking.opens,
      eTrackClicks: email.tracking.clicks,
      eDomainId: email.domainId,
      eDomain: email.domain,
      eFromEmail: email.fromEmail,
      eFromName: email.fromName,
      eReplyTo: email.replyTo,
      eSubject: email.subject,
      eHtml: email.html,
      eText: email.text,
      eHeaders: JSON.stringify(email.headers),
      eAttachments: JSON.stringify(email.attachments),
      eTemplate: email.templateId,
      eTemplateVersion: email.templateVersion,
      eTags: email.tags,
      eStream: email.stream,
      eStreamKind: email.streamKind,
      eMessageId: email.messageId,
      eStatus: email.status,
      eScheduled: email.scheduledAt,
      eNext: email.nextAttemptAt,
      eSize: email.sizeBytes,
      eDay: email.quotaDay,
      eAt: email.createdAt,
      rIds: recipients.map((r) => r.id),
      rKinds: recipients.map((r) => r.kind),
      rEmails: recipients.map((r) => r.email),
      mId: message.id,
      mSubject: message.subject,
      mText: message.text,
      mHtml: message.html,
      mFromEmail: message.from.email,
      mFromName: message.from.name,
      mTo: JSON.stringify(message.to),
      mCc: JSON.stringify(message.cc),
      mRfc: message.rfcMessageId,
      mInReplyTo: message.inReplyTo,
      mReferences: message.references,
      mAttachments: message.attachmentCount,
    },
  };
}
