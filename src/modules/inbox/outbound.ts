import type { MailboxAddress } from '../../../db/entities/index.ts';
import { newId } from '../../../db/ids.ts';
import { bareMessageId, parseMessageIdList, participantsOf, type ThreadingInput } from './threading.ts';

export interface OutboundMessageInput {
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

/** An outbound inbox message as acceptance writes it (see sends/acceptance.repo.ts), placed in its thread by `thread`. */
export interface NewOutboundMessage extends Omit<OutboundMessageInput, 'rfcMessageId' | 'createdAt'> {
  id: string;
  /** Bare (no angle brackets); null when empty. */
  rfcMessageId: string | null;
  thread: ThreadingInput;
}

/**
 * A transactional email as its workspace's inbox records it (direction outbound), threaded like
 * inbound mail so that replies to it land in the same thread; written in the transaction that
 * creates the email (the unique email id of inbox messages refuses a second one). Attachment
 * bytes are not kept: attachment_ingest_status `unavailable`, attachments_ready true. Bodies
 * longer than the inbox keeps are cut.
 */
export function outboundMessage(input: OutboundMessageInput): NewOutboundMessage {
  const participants = participantsOf([input.from.email, ...input.to.map((a) => a.email), ...input.cc.map((a) => a.email)]);
  const inReplyTo = input.inReplyTo ? bareMessageId(input.inReplyTo) || null : null;
  const references = parseMessageIdList(input.references);
  return {
    id: newId(),
    subject: input.subject.slice(0, 998),
    text: input.text.slice(0, INBOX_TEXT_LIMIT),
    html: input.html === null ? null : input.html.slice(0, INBOX_HTML_LIMIT),
    from: input.from,
    to: input.to,
    cc: input.cc,
    rfcMessageId: bareMessageId(input.rfcMessageId) || null,
    inReplyTo,
    references,
    attachmentCount: input.attachmentCount,
    thread: { subject: input.subject, inReplyTo, references, participants, at: input.createdAt },
  };
}
