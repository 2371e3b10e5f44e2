import { createHash } from 'node:crypto';
import { InboxAttachment, InboxMessage, InboxThread, type MailboxAddress } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { unique } from './factories.ts';

/**
 * Inbox rows written directly (as the ingestion pipeline would), for tests of the read API:
 * threads, messages in them, attachments with their bytes in a blob store.
 */
export async function insertThread(
  orm: MikroORM,
  orgId: string,
  overrides: Partial<Pick<InboxThread, 'id' | 'subject' | 'participants' | 'messageCount' | 'lastMessageAt' | 'createdAt'>> = {},
): Promise<InboxThread> {
  const em = scopeToOrg(orm.em, orgId);
  const subject = overrides.subject ?? unique('Subject');
  const thread = em.create(InboxThread, {
    orgId,
    subject,
    normalizedSubject: subject.toLowerCase(),
    participants: ['alice@example.com', 'support@inbox.example.com'],
    messageCount: 1,
    lastMessageAt: new Date(),
    ...overrides,
  });
  await em.flush();
  return thread;
}

export type MessageOverrides = Partial<
  Pick<
    InboxMessage,
    | 'id'
    | 'threadId'
    | 'direction'
    | 'kind'
    | 'subject'
    | 'text'
    | 'html'
    | 'fromEmail'
    | 'fromName'
    | 'cc'
    | 'rfcMessageId'
    | 'inReplyTo'
    | 'references'
    | 'inReplyToId'
    | 'emailId'
    | 'attachmentIngestStatus'
    | 'failedAttachments'
    | 'attachmentCount'
    | 'attachmentsReady'
    | 'authResults'
    | 'sentAt'
    | 'readAt'
    | 'createdAt'
  >
> & { to?: MailboxAddress[] };

/** A message (in a new thread unless `threadId` is given), inbound and settled by default. */
export async function insertMessage(orm: MikroORM, orgId: string, overrides: MessageOverrides = {}): Promise<InboxMessage> {
  const threadId = overrides.threadId ?? (await insertThread(orm, orgId)).id;
  const em = scopeToOrg(orm.em, orgId);
  const id = overrides.id ?? newId();
  const message = em.create(InboxMessage, {
    id,
    orgId,
    threadId,
    direction: 'inbound',
    subject: 'Hello',
    text: 'Hello there',
    fromEmail: 'alice@example.com',
    fromName: 'Alice',
    to: [{ email: 'support@inbox.example.com', name: 'Support' }],
    rfcMessageId: `<${id}@mail.example.com>`,
    attachmentIngestStatus: 'ready',
    attachmentsReady: true,
    ...overrides,
  });
  await em.flush();
  return message;
}

/** An attachment row of a message; `bytes` are written to `blobs` when the attachment is stored. */
export async function insertAttachment(
  orm: MikroORM,
  orgId: string,
  options: {
    messageId: string;
    bytes?: Buffer;
    blobs?: BlobStore;
    id?: string;
    filename?: string;
    contentType?: string;
    position?: number;
    status?: 'stored' | 'failed';
  },
): Promise<InboxAttachment> {
  const bytes = options.bytes ?? Buffer.from('attachment bytes');
  const status = options.status ?? 'stored';
  const id = options.id ?? newId();
  const blobKey = status === 'stored' ? `inbox/${orgId}/${options.messageId}/${id}` : null;
  if (blobKey !== null) {
    if (!options.blobs) throw new Error('a stored attachment needs a blob store for its bytes');
    await options.blobs.put(blobKey, bytes);
  }
  const em = scopeToOrg(orm.em, orgId);
  const attachment = em.create(InboxAttachment, {
    id,
    orgId,
    messageId: options.messageId,
    position: options.position ?? 0,
    filename: options.filename ?? 'file.bin',
    contentType: options.contentType ?? 'application/octet-stream',
    sizeBytes: bytes.length,
    status,
    blobKey,
    sha256: status === 'stored' ? createHash('sha256').update(bytes).digest('hex') : null,
  });
  await em.flush();
  return attachment;
}

/**
 * Sets a message's updated_at in SQL at microsecond precision, e.g. `'2026-01-01T00:00:00.000001Z'`.
 */
export async function setUpdatedAt(orm: MikroORM, messageId: string, at: string): Promise<void> {
  await orm.em.fork().execute('update inbox_messages set updated_at = ?::timestamptz where id = ?', [at, messageId]);
}
