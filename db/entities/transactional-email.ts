import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/**
 * scheduled: waiting for scheduled_at (cancellable) · queued: accepted, waiting for hand-off ·
 * sending: the relay conversation has started · sent: settled, at least one recipient accepted ·
 * failed: settled, no recipient accepted · cancelled: cancelled before sending.
 */
export const EMAIL_STATUSES = ['scheduled', 'queued', 'sending', 'sent', 'failed', 'cancelled'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/**
 * Per recipient: queued → sent (relay accepted) → delivered (final hop accepted) · deferred (4xx,
 * retrying) · bounced (5xx, a DSN, or retries ran out) · complained · failed (never handed over)
 * · cancelled.
 */
export const RECIPIENT_STATUSES = ['queued', 'sent', 'delivered', 'deferred', 'bounced', 'complained', 'failed', 'cancelled'] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];
export const RECIPIENT_KINDS = ['to', 'cc', 'bcc'] as const;
export type RecipientKind = (typeof RECIPIENT_KINDS)[number];

/** What the email record keeps of an attachment: never the bytes, except a transient blob until settled. */
export interface EmailAttachmentRecord {
  filename: string;
  content_type: string | null;
  size_bytes: number;
  content_id: string | null;
  /** Where the bytes are until the send settles (inline: a transient blob; stored: the upload's blob). */
  blob_key: string | null;
  /** Set for a stored attachment reference. */
  attachment_id: string | null;
}

/**
 * One transactional email (POST /api/v1/outbox/emails): a row of its sending domain's queue,
 * delivered by the domain's actor (`send-domain:<domainId>`).
 * The body lives here (not in workflow history); `messageId` is Herald's RFC 5322 Message-ID
 * without angle brackets, fixed at acceptance so a resend after a crash carries the same one.
 * `creditsCharged` / `overageCharged` are what acceptance took, so a 502 or a permanent failure
 * before hand-off gives back exactly that.
 */
export const TransactionalEmailSchema = defineEntity({
  name: 'TransactionalEmail',
  tableName: 'transactional_emails',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    apiKeyId: p.string().length(24).nullable(),
    domainId: p.string().length(24),
    /** The sending domain name (denormalised for events and metrics). */
    domain: p.string().length(253),
    fromEmail: p.string().length(320),
    fromName: p.string().length(320).nullable(),
    replyTo: p.string().length(320).nullable(),
    subject: p.string().length(998),
    html: p.text().nullable(),
    text: p.text().nullable(),
    headers: p.json<Record<string, string>>().defaultRaw(`'{}'`),
    attachments: p.json<EmailAttachmentRecord[]>().defaultRaw(`'[]'`),
    /** The stored template the message was rendered from (template_id on the send), and its version then. */
    templateId: p.string().length(24).nullable(),
    templateVersion: p.integer().nullable(),
    /** Set on a broadcast's message (one per contact): the broadcast and the contact it goes to. */
    broadcastId: p.string().length(24).nullable(),
    contactId: p.string().length(24).nullable(),
    /** Set on an automation's message: the run and the step that sent it (one email per run and step). */
    automationRunId: p.string().length(24).nullable(),
    automationStepId: p.string().length(64).nullable(),
    /** The message stream it belongs to (Herald extension): `transactional`, `broadcast` or a custom stream's name. */
    stream: p.string().length(64).default('transactional'),
    /** Its stream's kind when accepted: transactional mail is claimed ahead of broadcast mail of the same domain. */
    streamKind: p.string().length(16).default('transactional'),
    /** The open pixel and tracked links of its HTML, decided at acceptance (src/modules/tracking/tracking.fns.ts). */
    trackOpens: p.boolean().default(false),
    trackClicks: p.boolean().default(false),
    /** The sender's labels (tags on the send), for finding emails in GET /outbox/emails. */
    tags: p.array().default([]),
    messageId: p.string().length(400).unique(),
    status: p.enum(EMAIL_STATUSES),
    scheduledAt: p.datetime().nullable(),
    /** Bytes of the message as built (headers, bodies, attachments), for the 25 MB rule. */
    sizeBytes: p.integer().default(0),
    creditsCharged: p.integer().default(0),
    overageCharged: p.integer().default(0),
    /** Whether credits and the domain quota were given back (502, failure before hand-off, cancel). */
    quotaReleased: p.boolean().default(false),
    /** The UTC day whose warm-up counter this email counted against, `YYYY-MM-DD`. */
    quotaDay: p.string().length(10),
    /** The credit shard charged and the warm-up counter shard counted (quota.repo.ts), where a release gives back. */
    quotaShard: p.smallint().default(0),
    /**
     * Accepted with a test key (or launched by one): delivered to the sandbox relay, never to
     * a real relay or MX (src/modules/sandbox/).
     */
    sandbox: p.boolean().default(false),
    /** Bumped by each hand-off attempt that reached the relay. */
    handoffAttempts: p.integer().default(0),
    lastError: p.string().length(1024).nullable(),
    /** When the per-email workflow of the design before domain actors was started (kept for rows of that time). */
    workflowStartedAt: p.datetime().nullable(),
    /**
     * When the domain's actor should next take it: at acceptance (or `scheduled_at`), after a
     * deferral the retry time, while an attempt runs the end of its lease (so a dead worker's
     * attempt is taken again); null once settled or cancelled.
     */
    nextAttemptAt: p.datetime().nullable(),
    /** When the first attempt began (the retry window counts from it). */
    firstAttemptAt: p.datetime().nullable(),
    sentAt: p.datetime().nullable(),
    settledAt: p.datetime().nullable(),
    cancelledAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  uniques: [
    {
      name: 'transactional_emails_automation_step_unique',
      properties: ['automationRunId', 'automationStepId'],
      where: { automationRunId: { $ne: null } },
    },
    {
      name: 'transactional_emails_broadcast_contact_unique',
      properties: ['broadcastId', 'contactId'],
      where: { broadcastId: { $ne: null } },
    },
  ],
  indexes: [
    // The email log (transactional emails only: a broadcast's messages are read through the broadcast).
    { name: 'transactional_emails_log_index', properties: ['orgId', 'createdAt', 'id'], where: { broadcastId: null } },
    // The log's tag filter (which adds `cardinality(tags) <> 0`): untagged emails, most sends, stay out.
    { name: 'transactional_emails_tags_index', properties: ['tags'], type: 'gin', where: 'cardinality(tags) <> 0' },
    // Mail still on its way, by workspace and domain: removing a domain counts it, the attachment
    // cleanup looks in it. Only open rows: a settled send leaves it (no entry at settlement).
    {
      name: 'transactional_emails_open_index',
      properties: ['orgId', 'domainId'],
      where: { status: { $in: ['scheduled', 'queued', 'sending'] } },
    },
    // The domain actor's claims and next due times, in three halves that share no row:
    // transactional-kind mail (priority), the rest sent one by one (automation and broadcast-kind
    // stream mail: this one), and broadcast messages (transactional first, and a broadcast's
    // backlog never sits in front of them); and the reconciler's look for stranded emails.
    {
      name: 'transactional_emails_due_index',
      properties: ['domainId', 'nextAttemptAt', 'id'],
      where: { status: { $in: ['scheduled', 'queued', 'sending'] }, broadcastId: null, streamKind: { $ne: 'transactional' } },
    },
    // Transactional-kind mail alone, claimed before automation and custom broadcast-stream mail.
    {
      name: 'transactional_emails_priority_due_index',
      properties: ['domainId', 'nextAttemptAt', 'id'],
      where: { status: { $in: ['scheduled', 'queued', 'sending'] }, broadcastId: null, streamKind: 'transactional' },
    },
    {
      name: 'transactional_emails_broadcast_due_index',
      properties: ['domainId', 'nextAttemptAt', 'id'],
      where: { status: { $in: ['scheduled', 'queued', 'sending'] }, broadcastId: { $ne: null } },
    },
  ],
});

export class TransactionalEmail extends TransactionalEmailSchema.class {}
TransactionalEmailSchema.setClass(TransactionalEmail);

/** One envelope recipient of a transactional email and its outcome. */
export const EmailRecipientSchema = defineEntity({
  name: 'EmailRecipient',
  tableName: 'email_recipients',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    emailId: p.string().length(24),
    kind: p.enum(RECIPIENT_KINDS),
    /** Lower-cased address; unique per email (duplicates across to/cc/bcc are merged). */
    email: p.string().length(320),
    name: p.string().length(320).nullable(),
    status: p.enum(RECIPIENT_STATUSES).default('queued'),
    attempts: p.integer().default(0),
    /** Last SMTP reply for this recipient (code and text), or a DSN's diagnostic. */
    lastResponse: p.string().length(1024).nullable(),
    lastResponseCode: p.integer().nullable(),
    bounceType: p.string().length(10).nullable(),
    nextAttemptAt: p.datetime().nullable(),
    sentAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  uniques: [{ properties: ['emailId', 'email'] }],
  indexes: [{ properties: ['orgId', 'email'] }],
});

export class EmailRecipient extends EmailRecipientSchema.class {}
EmailRecipientSchema.setClass(EmailRecipient);

export const SUPPRESSION_REASONS = ['hard_bounce', 'complaint', 'unsubscribe', 'manual'] as const;
export type SuppressionReason = (typeof SUPPRESSION_REASONS)[number];

/** An address Herald will not send to for this workspace (hard bounce, complaint, operator). */
export const SuppressionSchema = defineEntity({
  name: 'Suppression',
  tableName: 'suppressions',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    email: p.string().length(320),
    reason: p.enum(SUPPRESSION_REASONS),
    /** The email whose bounce or complaint caused it. */
    emailId: p.string().length(24).nullable(),
    detail: p.string().length(1024).nullable(),
    /** The stream it keeps mail from ('' : every stream; Herald extension, the API shows null). */
    stream: p.string().length(64).default(''),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['orgId', 'email', 'stream'] }],
});

export class Suppression extends SuppressionSchema.class {}
SuppressionSchema.setClass(Suppression);

export const SUPPRESSION_ACTIONS = ['added', 'removed'] as const;
export type SuppressionAction = (typeof SUPPRESSION_ACTIONS)[number];

/**
 * The audit trail of a workspace's suppression list: every address added (by a bounce, a
 * complaint or a caller) or removed, by which API key when a caller did it. Never updated.
 */
export const SuppressionChangeSchema = defineEntity({
  name: 'SuppressionChange',
  tableName: 'suppression_changes',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    email: p.string().length(320),
    action: p.enum(SUPPRESSION_ACTIONS),
    reason: p.enum(SUPPRESSION_REASONS),
    /** The API key that made the change; null when Herald did (a bounce, a complaint). */
    apiKeyId: p.string().length(24).nullable(),
    emailId: p.string().length(24).nullable(),
    detail: p.string().length(1024).nullable(),
    /** The stream the entry was scoped to ('' : every stream). */
    stream: p.string().length(64).default(''),
    createdAt: createdAtColumn(),
  },
  indexes: [{ properties: ['orgId', 'createdAt', 'id'] }],
});

export class SuppressionChange extends SuppressionChangeSchema.class {}
SuppressionChangeSchema.setClass(SuppressionChange);

/**
 * The warm-up counter: messages counted against one domain on one UTC day (recipients, like
 * credits), in shard rows: an uncapped domain counts each send on the credit shard it charged,
 * a capped one on shard 0 only, incremented atomically only while the day's sum stays under the cap.
 */
export const DomainDailySendSchema = defineEntity({
  name: 'DomainDailySend',
  tableName: 'domain_daily_sends',
  properties: {
    domainId: p.string().length(24).primary(),
    day: p.string().length(10).primary(),
    shard: p.smallint().primary().default(0),
    orgId: p.string().length(24),
    count: p.integer().default(0),
  },
});

export class DomainDailySend extends DomainDailySendSchema.class {}
DomainDailySendSchema.setClass(DomainDailySend);
