/**
 * The inbox read side: threads, messages (polled in updated_at order), one message with its
 * reply correlation, and attachment bytes from the blob store. The ingestion pipeline writes
 * these tables; inbox-state.service.ts changes their state (read, starred, archived, tags).
 */
import type { Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { InboxAttachment, InboxMessage, InboxThread, User } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { BlobNotFoundError, type BlobStore } from '../../blob/blob-store.ts';
import { AppError } from '../../errors.ts';
import { updatedAfterBound } from './inbox.fns.ts';
import {
  findMessagePage,
  findStoredAttachments,
  findThreadPage,
  findThreadSummaries,
  type MineFilter,
  type PreciseAfter,
  type PreciseKeysetPage,
  type ThreadSummaries,
} from './inbox.repo.ts';
import type { ListMessagesInput, ListThreadsInput } from './inbox.schemas.ts';

/** Replies listed on one message (oldest first); a longer chain is followed reply by reply. */
export const MAX_REPLIES = 100;

const REFERENCE_FIELDS = ['id', 'threadId', 'direction', 'subject', 'createdAt'] as const;

/** A message another one answers, or an answer: what reply correlation shows of it. */
export type MessageReference = Pick<InboxMessage, (typeof REFERENCE_FIELDS)[number]>;

export interface MessagePage extends PreciseKeysetPage<InboxMessage> {
  attachments: ReadonlyMap<string, InboxAttachment[]>;
}

export interface ThreadPage extends PreciseKeysetPage<InboxThread>, ThreadSummaries {}

export interface MessageDetail {
  message: InboxMessage;
  attachments: InboxAttachment[];
  inReplyTo: MessageReference | null;
  replies: MessageReference[];
}

export interface AttachmentDownload {
  attachment: InboxAttachment;
  sizeBytes: number;
  stream: Readable;
}

/** The caller as a `scope=mine` filter needs it. */
export interface InboxCaller {
  orgId: string;
  actorUserId: string;
  keyId: string | null;
}

export const messageNotFound = (id: string) => new AppError('not_found', `Inbox message ${id} does not exist.`);
export const threadNotFound = (id: string) => new AppError('not_found', `Inbox thread ${id} does not exist.`);
const attachmentNotFound = (id: string) => new AppError('not_found', `Attachment ${id} does not exist.`);

/** A keyset position from a cursor: the precise text when the cursor has it, else the Date. */
function preciseAfter(after: KeysetPosition | undefined): PreciseAfter | undefined {
  return after ? { sortKey: after.sortText ?? after.sortValue.toISOString(), id: after.id } : undefined;
}

/**
 * Resolves once `stream` can be read (or has ended), so that a blob vanishing between the
 * size check and the open answers 404 instead of failing after the headers went out.
 */
async function whenReadable(stream: Readable): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const done = (error?: Error) => {
      stream.off('readable', onReadable);
      stream.off('error', done);
      if (error) reject(error);
      else resolve();
    };
    const onReadable = () => done();
    stream.on('readable', onReadable);
    stream.on('error', done);
  });
}

const isMissingFile = (error: unknown) => error instanceof BlobNotFoundError || (error as NodeJS.ErrnoException | null)?.code === 'ENOENT';

/** Read access to one workspace's inbox at a time; every query names the workspace. */
export function createInboxService({ orm, blobs }: { orm: MikroORM; blobs: BlobStore | null }) {
  /** `scope=mine`: the actor user's address (if the user exists) and the key. */
  async function mineFilter(caller: InboxCaller): Promise<MineFilter> {
    const user = await scopeToOrg(orm.em, caller.orgId).findOne(User, { id: caller.actorUserId }, { fields: ['email'] });
    return { email: user?.email ? user.email.toLowerCase() : null, keyId: caller.keyId };
  }

  return {
    /** Threads, the most recent conversation first, each with its latest message and attachment state. */
    async listThreads(
      orgId: string,
      filter: Omit<ListThreadsInput, 'limit' | 'cursor'>,
      page: { limit: number; after?: KeysetPosition | undefined },
    ): Promise<ThreadPage> {
      const em = scopeToOrg(orm.em, orgId);
      const flag = (value: 'true' | 'false' | undefined) => (value === undefined ? undefined : value === 'true');
      const result = await findThreadPage(
        em,
        orgId,
        { archived: flag(filter.archived), starred: flag(filter.starred), unread: flag(filter.unread), tag: filter.tag },
        { limit: page.limit, after: preciseAfter(page.after) },
      );
      const summaries = await findThreadSummaries(
        em,
        orgId,
        result.items.map((item) => item.row.id),
      );
      return { ...result, ...summaries };
    },

    /**
     * Messages in (updated_at, id) ascending order, filtered; `updated_after` is inclusive.
     * Each comes with its stored attachments (one extra query per page).
     */
    async listMessages(
      caller: InboxCaller,
      filter: Pick<ListMessagesInput, 'thread_id' | 'updated_after' | 'direction' | 'scope'>,
      page: { limit: number; after?: KeysetPosition | undefined },
    ): Promise<MessagePage> {
      const em = scopeToOrg(orm.em, caller.orgId);
      const result = await findMessagePage(
        em,
        caller.orgId,
        {
          threadId: filter.thread_id?.toLowerCase(),
          direction: filter.direction,
          updatedAfter: filter.updated_after === undefined ? undefined : updatedAfterBound(filter.updated_after),
          mine: filter.scope === 'mine' ? await mineFilter(caller) : undefined,
        },
        { limit: page.limit, after: preciseAfter(page.after) },
      );
      const attachments = await findStoredAttachments(
        em,
        result.items.map((item) => item.row.id),
      );
      return { ...result, attachments };
    },

    /** One thread with what its list item shows (latest message, attachment state, unread count); 404 when absent. */
    async getThread(orgId: string, threadId: string): Promise<{ thread: InboxThread; summary: ThreadSummaries }> {
      const em = scopeToOrg(orm.em, orgId);
      const id = threadId.toLowerCase();
      const thread = await em.findOne(InboxThread, { id }, { refresh: true });
      if (!thread) throw threadNotFound(threadId);
      return { thread, summary: await findThreadSummaries(em, orgId, [id]) };
    },

    /** One message with its stored attachments, the message it answers and its replies; 404 when absent. */
    async getMessage(orgId: string, messageId: string): Promise<MessageDetail> {
      const em = scopeToOrg(orm.em, orgId);
      const id = messageId.toLowerCase();
      const message = await em.findOne(InboxMessage, { id });
      if (!message) throw messageNotFound(messageId);
      const attachments = (await findStoredAttachments(em, [id])).get(id) ?? [];
      const inReplyTo = message.inReplyToId
        ? await em.findOne(InboxMessage, { id: message.inReplyToId }, { fields: [...REFERENCE_FIELDS] })
        : null;
      const replies = await em.find(
        InboxMessage,
        { inReplyToId: id },
        { fields: [...REFERENCE_FIELDS], orderBy: { createdAt: 'asc', id: 'asc' }, limit: MAX_REPLIES },
      );
      return { message, attachments, inReplyTo, replies };
    },

    /**
     * The bytes of a stored attachment of a message. 404 when the attachment is absent, belongs
     * to another message, failed ingestion, or its blob is missing; 503 without a blob store.
     */
    async openAttachment(orgId: string, messageId: string, attachmentId: string): Promise<AttachmentDownload> {
      const em = scopeToOrg(orm.em, orgId);
      const attachment = await em.findOne(InboxAttachment, { id: attachmentId.toLowerCase(), messageId: messageId.toLowerCase() });
      if (!attachment || attachment.status !== 'stored' || !attachment.blobKey) throw attachmentNotFound(attachmentId);
      if (!blobs) {
        throw new AppError('service_unavailable', 'Attachment storage is not configured (BLOB_DIR).', { reason: 'STORAGE_UNAVAILABLE' });
      }
      const sizeBytes = await blobs.size(attachment.blobKey);
      if (sizeBytes === null) throw attachmentNotFound(attachmentId);
      try {
        const stream = await blobs.get(attachment.blobKey);
        await whenReadable(stream).catch((error: unknown) => {
          stream.destroy();
          throw error;
        });
        return { attachment, sizeBytes, stream };
      } catch (error) {
        if (isMissingFile(error)) throw attachmentNotFound(attachmentId);
        throw error;
      }
    },
  };
}

export type InboxService = ReturnType<typeof createInboxService>;
