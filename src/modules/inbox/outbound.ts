import type { EntityManager } from '@mikro-orm/postgresql';
import { InboxMessage, type MailboxAddress } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { bareMessageId, lockWorkspaceThreads, parseMessageIdList, participantsOf, threadMessage } from './threading.ts';

export interface OutboundMessageInput {
  orgId: string;
  emailId: string;
  /** Herald's Message-ID of the email, with or without angle brackets. */
  rfcMessageId: string;
  subject: string;
  text: string;
  html: string | null;
  from: MailboxAddress;
  to: MailboxAddress[];
  cc: MailboxAddress[];
  inReplyTo: string | null;
  references: string[];
  /** Attachments the email carried (their bytes are not kept for the inbox). */
  attachmentCount: number;
  createdAt: Date;
}

/** The largest text body kept on an inbox message (characters); longer ones are cut. */
export const INBOX_TEXT_LIMIT = 1024 * 1024;
/** The largest html body kept on an inbox message (characters); longer ones are cut. */
export const INBOX_HTML_LIMIT = 5 * 1024 * 1024;

/**
 * Records a transactional email in its workspace's inbox (direction outbound), threaded like
 * inbound mail so that replies to it land in the same thread. `em` is scoped to the workspace
 * and inside the caller's transaction (the message commits with the email). Attachment bytes
 * are not kept: attachment_ingest_status `unavailable`, attachments_ready true. Called once per
 * email, in the transaction that creates the email (a second call would be refused by the
 * unique email id of the inbox message).
 */
export async function recordOutboundMessage(em: EntityManager, input: OutboundMessageInput): Promise<InboxMessage> {
  const participants = participantsOf([input.from.email, ...input.to.map((a) => a.email), ...input.cc.map((a) => a.email)]);
  await lockWorkspaceThreads(em, input.orgId, { subject: input.subject, participants });
  const inReplyTo = input.inReplyTo ? bareMessageId(input.inReplyTo) || null : null;
  const references = parseMessageIdList(input.references);
  const { thread, parent } = await threadMessage(em, input.orgId, {
    subject: input.subject,
    inReplyTo,
    references,
    participants,
    at: input.createdAt,
  });
  return em.create(InboxMessage, {
    id: newId(),
    orgId: input.orgId,
    threadId: thread.id,
    direction: 'outbound',
    kind: 'message',
    inboundId: null,
    emailId: input.emailId,
    subject: input.subject.slice(0, 998),
    text: input.text.slice(0, INBOX_TEXT_LIMIT),
    html: input.html === null ? null : input.html.slice(0, INBOX_HTML_LIMIT),
    fromEmail: input.from.email,
    fromName: input.from.name,
    to: input.to,
    cc: input.cc,
    rfcMessageId: bareMessageId(input.rfcMessageId) || null,
    inReplyTo,
    references,
    inReplyToId: parent?.id ?? null,
    attachmentIngestStatus: 'unavailable',
    failedAttachments: [],
    attachmentCount: input.attachmentCount,
    attachmentsReady: true,
    authResults: null,
    sentAt: input.createdAt,
    createdAt: input.createdAt,
    updatedAt: new Date(),
  });
}
