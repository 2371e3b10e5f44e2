import type { SendingDomain } from './suppression.repo.ts';
import { newId } from '../../../db/ids.ts';
import { outboundMessage } from '../inbox/outbound.ts';
import type { ResolvedStream } from '../streams/streams.fns.ts';
import { decideTracking, TRANSACTIONAL_TRACKING, trackingColumns } from '../tracking/tracking.fns.ts';
import type { PreparedAttachment } from './send-attachments.ts';
import type { SendContent } from './send-content.ts';
import { messageIdFor, utcDay, type EnvelopeRecipient, type ParsedFrom } from './sends.fns.ts';
import type { SendEmailInput } from './sends.schemas.ts';
import type { AcceptedEmail } from './sends.types.ts';

/** What a checked send is made of, before its domain and stream are known. */
export interface SendParts {
  orgId: string;
  emailId: string;
  at: Date;
  from: ParsedFrom;
  headers: Record<string, string>;
  recipients: EnvelopeRecipient[];
  content: SendContent;
  prepared: PreparedAttachment[];
  /** When a scheduled send is due; null for an immediate one. */
  scheduledAt: Date | null;
}

/** The send's message in the workspace's inbox (its thread is placed by the acceptance statement). */
export function composeInboxMessage(parts: SendParts) {
  const { headers, recipients, content, at } = parts;
  const headerValue = (name: string) => Object.entries(headers).find(([key]) => key.toLowerCase() === name)?.[1] ?? null;
  return outboundMessage({
    rfcMessageId: messageIdFor(parts.emailId, parts.from.domain),
    subject: content.subject,
    text: content.text ?? '',
    html: content.html,
    from: { email: parts.from.email, name: parts.from.name ?? '' },
    to: recipients.filter((r) => r.kind === 'to').map((r) => ({ email: r.email, name: '' })),
    cc: recipients.filter((r) => r.kind === 'cc').map((r) => ({ email: r.email, name: '' })),
    inReplyTo: headerValue('in-reply-to'),
    references: (headerValue('references') ?? '').split(/\s+/).filter(Boolean),
    attachmentCount: parts.prepared.length,
    createdAt: at,
  });
}

/** The email row acceptance writes, on its sending domain and stream. */
export function composeEmailRow(
  parts: SendParts,
  input: SendEmailInput,
  sender: { apiKeyId: string | null; sandbox: boolean; domain: SendingDomain; stream: ResolvedStream; sizeBytes: number },
) {
  const { emailId, at, content, scheduledAt } = parts;
  return {
    id: emailId,
    orgId: parts.orgId,
    apiKeyId: sender.apiKeyId,
    sandbox: sender.sandbox,
    domainId: sender.domain.id,
    domain: sender.domain.domain,
    fromEmail: parts.from.email,
    fromName: parts.from.name,
    replyTo: input.reply_to ?? null,
    subject: content.subject,
    html: content.html,
    text: content.text,
    templateId: content.template?.id ?? null,
    templateVersion: content.template?.version ?? null,
    tags: [...new Set(input.tags ?? [])],
    stream: sender.stream.name,
    streamKind: sender.stream.kind,
    tracking: decideTracking(input.tracking, TRANSACTIONAL_TRACKING),
    headers: parts.headers,
    attachments: parts.prepared.map((a) => a.record),
    messageId: messageIdFor(emailId, sender.domain.domain),
    status: scheduledAt ? ('scheduled' as const) : ('queued' as const),
    scheduledAt,
    nextAttemptAt: scheduledAt ?? at,
    sizeBytes: sender.sizeBytes,
    quotaDay: utcDay(scheduledAt ?? at),
    createdAt: at,
  };
}

/** The recipient rows acceptance writes. */
export function composeRecipientRows(parts: SendParts) {
  return parts.recipients.map((r) => ({ id: newId(parts.at), kind: r.kind, email: r.email }));
}

/**
 * The answer a client sees for an accepted email: a successful reservation always charges one
 * credit per recipient.
 */
export function acceptedAnswer(
  email: ReturnType<typeof composeEmailRow>,
  rows: ReturnType<typeof composeRecipientRows>,
  at: Date,
): AcceptedEmail {
  return {
    email: {
      ...email,
      ...trackingColumns(email.tracking),
      creditsCharged: rows.length,
      overageCharged: 0,
      lastError: null,
      updatedAt: at,
      sentAt: null,
      cancelledAt: null,
    },
    recipients: rows.map((r) => ({
      ...r,
      status: 'queued' as const,
      attempts: 0,
      lastResponse: null,
      bounceType: null,
      nextAttemptAt: null,
      updatedAt: at,
    })),
  };
}
