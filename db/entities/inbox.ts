import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const INBOUND_STATUSES = ['received', 'ingested', 'failed'] as const;
export type InboundStatus = (typeof INBOUND_STATUSES)[number];

/**
 * One message as the inbound MX received it, recorded (with its raw bytes in the blob store)
 * before the 250 reply. Not tenant-scoped: routing to workspaces happens during ingestion
 * (`inbound:<id>` workflow), which may create one inbox message per workspace it reaches.
 */
export const InboundMessageSchema = defineEntity({
  name: 'InboundMessage',
  tableName: 'inbound_messages',
  properties: {
    id: idColumn(),
    blobKey: p.string().length(200),
    sizeBytes: p.integer(),
    sha256: p.string().length(64),
    mailFrom: p.string().length(320).default(''),
    rcptTo: p.array().default([]),
    remoteAddress: p.string().length(64).nullable(),
    clientHostname: p.string().length(253).nullable(),
    heloName: p.string().length(253).nullable(),
    tls: p.boolean().default(false),
    status: p.enum(INBOUND_STATUSES).default('received'),
    attempts: p.integer().default(0),
    lastError: p.string().length(1024).nullable(),
    /**
     * While `received`: when the inbound actor may claim it (receipt, a retry's time, or the end
     * of a running attempt's lease). Defaults to the insert's time for writers that omit it.
     */
    nextAttemptAt: p.datetime().nullable().defaultRaw('now()'),
    ingestedAt: p.datetime().nullable(),
    /** When the raw bytes were deleted from the blob store (INBOUND_RAW_RETENTION_DAYS after receipt). */
    rawDeletedAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  indexes: [
    // The inbound actor claims due received rows, oldest due first; the reconciler looks for stranded ones.
    { name: 'inbound_messages_due_index', properties: ['nextAttemptAt', 'id'], where: { status: 'received' } },
    // The retention run looks for ingested rows whose raw bytes are still stored.
    { name: 'inbound_messages_raw_kept_index', properties: ['createdAt'], where: { status: 'ingested', rawDeletedAt: null } },
  ],
});

export class InboundMessage extends InboundMessageSchema.class {}
InboundMessageSchema.setClass(InboundMessage);

/**
 * The drain lease of a platform-wide queue actor (one row per actor, e.g. `inbound-intake`):
 * held while its drain runs, so writers send no wake-up signal then (a NOTIFY reaches it).
 */
export const ActorLeaseSchema = defineEntity({
  name: 'ActorLease',
  tableName: 'actor_leases',
  properties: {
    name: p.string().length(100).primary(),
    leaseUntil: p.datetime().nullable(),
  },
});

export class ActorLease extends ActorLeaseSchema.class {}
ActorLeaseSchema.setClass(ActorLease);

/** A conversation: messages linked by In-Reply-To/References, or by subject and participants. */
export const InboxThreadSchema = defineEntity({
  name: 'InboxThread',
  tableName: 'inbox_threads',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    subject: p.string().length(998).default(''),
    /** Subject without reply/forward prefixes, lower-cased, whitespace collapsed. */
    normalizedSubject: p.string().length(998).default(''),
    /** Lower-cased addresses of everyone on any message of the thread. */
    participants: p.array().default([]),
    messageCount: p.integer().default(0),
    lastMessageAt: p.datetime(),
    /** Thread state (inbox.threads:write). A message received on an archived thread brings it back. */
    starred: p.boolean().default(false),
    archived: p.boolean().default(false),
    tags: p.array().default([]),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  indexes: [
    { properties: ['orgId', 'lastMessageAt'] },
    // Threading by subject reads the most recent threads of a subject: a receipt sent to
    // thousands has thousands of threads with one subject, so the order comes from the index.
    { properties: ['orgId', 'normalizedSubject', 'lastMessageAt'] },
  ],
});

export class InboxThread extends InboxThreadSchema.class {}
InboxThreadSchema.setClass(InboxThread);

export const MESSAGE_DIRECTIONS = ['inbound', 'outbound'] as const;
export type MessageDirection = (typeof MESSAGE_DIRECTIONS)[number];
export const ATTACHMENT_INGEST_STATUSES = ['pending', 'ready', 'partial_failure', 'unavailable'] as const;
export type AttachmentIngestStatus = (typeof ATTACHMENT_INGEST_STATUSES)[number];
/** What an inbound message turned out to be; reports also drive bounces and complaints. */
export const INBOX_MESSAGE_KINDS = ['message', 'bounce', 'delay', 'complaint', 'auto_reply'] as const;
export type InboxMessageKind = (typeof INBOX_MESSAGE_KINDS)[number];

export interface MailboxAddress {
  email: string;
  name: string;
}

export interface FailedAttachment {
  filename: string;
  reason: 'ingest_failed';
}

/**
 * One message in a workspace's inbox (the spec's Inbox message). Inbound ones come from an
 * InboundMessage (`inboundId`), outbound ones from a transactional email (`emailId`).
 * `updatedAt` moves with every change so pollers ordered by (updated_at, id) see it.
 */
export const InboxMessageSchema = defineEntity({
  name: 'InboxMessage',
  tableName: 'inbox_messages',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    threadId: p.string().length(24),
    direction: p.enum(MESSAGE_DIRECTIONS),
    kind: p.enum(INBOX_MESSAGE_KINDS).default('message'),
    inboundId: p.string().length(24).nullable(),
    emailId: p.string().length(24).nullable(),
    subject: p.string().length(998).default(''),
    text: p.text().default(''),
    html: p.text().nullable(),
    fromEmail: p.string().length(320).default(''),
    fromName: p.string().length(320).default(''),
    to: p.json<MailboxAddress[]>().defaultRaw(`'[]'`),
    cc: p.json<MailboxAddress[]>().defaultRaw(`'[]'`),
    rfcMessageId: p.string().length(998).nullable(),
    inReplyTo: p.string().length(998).nullable(),
    references: p.array().default([]),
    /** The message this one replies to, when it is in the workspace (reply correlation). */
    inReplyToId: p.string().length(24).nullable(),
    attachmentIngestStatus: p.enum(ATTACHMENT_INGEST_STATUSES),
    failedAttachments: p.json<FailedAttachment[]>().defaultRaw(`'[]'`),
    attachmentCount: p.integer().default(0),
    attachmentsReady: p.boolean().default(false),
    /** SPF, DKIM, DMARC results of an inbound message (extension field). */
    authResults: p.json<Record<string, unknown>>().nullable(),
    /** The Date header, when present and valid. */
    sentAt: p.datetime().nullable(),
    /** When the message was marked read; null while unread. Outbound messages are read when written. */
    readAt: p.datetime().nullable(),
    starred: p.boolean().default(false),
    tags: p.array().default([]),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  // An inbound message has no email_id and a sent one no inbound_id: each unique index holds only the rows that have its key.
  uniques: [
    { name: 'inbox_messages_inbound_id_org_id_unique', properties: ['inboundId', 'orgId'], where: { inboundId: { $ne: null } } },
    { name: 'inbox_messages_email_id_unique', properties: ['emailId'], where: { emailId: { $ne: null } } },
  ],
  indexes: [
    { properties: ['orgId', 'updatedAt', 'id'] },
    { properties: ['orgId', 'rfcMessageId'] },
    { properties: ['orgId', 'threadId', 'createdAt'] },
    // Reply correlation: the replies of a message (GET /inbox/messages/{id}).
    { properties: ['orgId', 'inReplyToId'], where: { inReplyToId: { $ne: null } } },
    // Unread counts of a page of threads, and marking a thread read.
    { properties: ['threadId'], where: { readAt: null } },
  ],
});

export class InboxMessage extends InboxMessageSchema.class {}
InboxMessageSchema.setClass(InboxMessage);

export const INBOX_ATTACHMENT_STATUSES = ['stored', 'failed'] as const;

/** One attachment of an inbound message; `position` is its order in the MIME tree. */
export const InboxAttachmentSchema = defineEntity({
  name: 'InboxAttachment',
  tableName: 'inbox_attachments',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    messageId: p.string().length(24),
    position: p.integer(),
    filename: p.string().length(512),
    contentType: p.string().length(255),
    sizeBytes: p.integer().default(0),
    contentId: p.string().length(998).nullable(),
    status: p.enum(INBOX_ATTACHMENT_STATUSES),
    blobKey: p.string().length(200).nullable(),
    sha256: p.string().length(64).nullable(),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['messageId', 'position'] }],
});

export class InboxAttachment extends InboxAttachmentSchema.class {}
InboxAttachmentSchema.setClass(InboxAttachment);
