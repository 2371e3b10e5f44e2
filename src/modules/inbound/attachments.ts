import { PassThrough, type Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { InboxAttachment, InboxMessage, type FailedAttachment, type InboundMessage } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';
import type { BlobStore, StoredBlob } from '../../blob/blob-store.ts';
import { upsertStoredAttachment } from './inbound-attachments.repo.ts';
import { parseMessageStream, type AttachmentMeta, type AttachmentPart } from './mime.ts';

/** No single attachment can be larger than the message that carried it. */
const ATTACHMENT_MAX_BYTES = 25 * 1024 * 1024;

export interface StoreOutcome {
  stored: number;
  failed: number;
  /** Inbox messages moved to ready / partial_failure. */
  settled: number;
}

/** Attachments that could not be stored yet; thrown before the final attempt so Temporal retries. */
export class AttachmentsIncompleteError extends Error {
  constructor(failed: number) {
    super(`${failed} attachment(s) could not be stored; retrying`);
    this.name = 'AttachmentsIncompleteError';
  }
}

/** `inbox/<orgId>/<messageId>/<position>`. */
export function attachmentBlobKey(orgId: string, messageId: string, position: number): string {
  return `inbox/${orgId}/${messageId}/${position}`;
}

/**
 * Feeds one stream to several writers (one per workspace the message reached) with
 * backpressure; a writer that fails drops out without stopping the others.
 */
async function fanOut(source: Readable, writers: ((body: Readable) => Promise<StoredBlob>)[]): Promise<PromiseSettledResult<StoredBlob>[]> {
  if (writers.length === 1) return Promise.allSettled([writers[0]!(source)]);
  const bodies = writers.map(() => new PassThrough());
  const results = Promise.allSettled(writers.map((write, index) => write(bodies[index]!)));
  try {
    for await (const chunk of source) {
      const live = bodies.filter((body) => !body.destroyed);
      await Promise.all(
        live.map((body) =>
          body.write(chunk)
            ? Promise.resolve()
            : new Promise<void>((resolve) => {
                body.once('drain', resolve);
                body.once('close', resolve);
              }),
        ),
      );
    }
    for (const body of bodies) if (!body.destroyed) body.end();
  } catch (error) {
    for (const body of bodies) body.destroy(error instanceof Error ? error : new Error(String(error)));
  }
  return results;
}

async function insertStored(orm: MikroORM, message: InboxMessage, part: AttachmentMeta, blob: StoredBlob): Promise<void> {
  await upsertStoredAttachment(orm.em, {
    orgId: message.orgId,
    messageId: message.id,
    position: part.position,
    filename: part.filename,
    contentType: part.contentType,
    sizeBytes: blob.sizeBytes,
    contentId: part.contentId,
    blobKey: blob.key,
    sha256: blob.sha256,
  });
}

/**
 * Settles every still-pending inbox message of a raw message: `ready` when all its attachments
 * are stored, else `partial_failure` listing the missing ones (reason ingest_failed);
 * attachments_ready turns true and updated_at moves. `names` gives filenames by position for
 * attachments that have no row.
 */
export async function settleAttachments(orm: MikroORM, inboundId: string, names: ReadonlyMap<number, string> = new Map()): Promise<number> {
  const em = orm.em.fork();
  const messages = await em.find(InboxMessage, { inboundId, attachmentIngestStatus: 'pending' }, ALL_TENANTS);
  if (messages.length === 0) return 0;
  const stored = await em.find(InboxAttachment, { messageId: { $in: messages.map((m) => m.id) }, status: 'stored' }, ALL_TENANTS);
  for (const message of messages) {
    const have = new Set(stored.filter((row) => row.messageId === message.id).map((row) => row.position));
    const failed: FailedAttachment[] = [];
    for (let position = 0; position < message.attachmentCount; position += 1) {
      if (!have.has(position)) failed.push({ filename: names.get(position) ?? `attachment-${position + 1}`, reason: 'ingest_failed' });
    }
    message.attachmentIngestStatus = failed.length > 0 ? 'partial_failure' : 'ready';
    message.failedAttachments = failed;
    message.attachmentsReady = true;
    message.updatedAt = new Date();
  }
  await em.flush();
  return messages.length;
}

/**
 * Stores the attachments of a raw message's pending inbox messages: the raw blob is parsed
 * again as a stream and each attachment piped straight into the blob store, once per message,
 * skipping those already stored (a retry redoes only what is missing). When some could not be
 * stored and this is not the final attempt, throws AttachmentsIncompleteError (Temporal retries
 * with backoff); on the final attempt the messages settle with partial_failure.
 */
export async function storeAttachments(input: {
  orm: MikroORM;
  blobs: BlobStore;
  inbound: InboundMessage;
  final: boolean;
}): Promise<StoreOutcome> {
  const { orm, blobs, inbound } = input;
  const em = orm.em.fork();
  const messages = await em.find(InboxMessage, { inboundId: inbound.id, attachmentIngestStatus: 'pending' }, ALL_TENANTS);
  if (messages.length === 0) return { stored: 0, failed: 0, settled: 0 };
  const already = await em.find(InboxAttachment, { messageId: { $in: messages.map((m) => m.id) }, status: 'stored' }, ALL_TENANTS);
  const done = new Set(already.map((row) => `${row.messageId}:${row.position}`));
  let stored = 0;
  let failed = 0;

  const onAttachment = async (part: AttachmentPart): Promise<void> => {
    const targets = messages.filter((message) => part.position < message.attachmentCount && !done.has(`${message.id}:${part.position}`));
    if (targets.length === 0) return;
    const results = await fanOut(
      part.content,
      targets.map(
        (message) => (body: Readable) =>
          blobs.put(attachmentBlobKey(message.orgId, message.id, part.position), body, { maxBytes: ATTACHMENT_MAX_BYTES }),
      ),
    );
    for (const [index, result] of results.entries()) {
      const message = targets[index]!;
      if (result.status === 'rejected') {
        failed += 1;
        continue;
      }
      // The row only after the bytes: a row always points at a whole blob.
      await insertStored(orm, message, { ...part, sizeBytes: result.value.sizeBytes }, result.value);
      done.add(`${message.id}:${part.position}`);
      stored += 1;
    }
  };

  const parsed = await parseMessageStream(await blobs.get(inbound.blobKey), onAttachment);
  // A parse that stopped early this time leaves the later attachments unstored.
  const missing = messages.reduce((sum, message) => {
    let count = 0;
    for (let position = 0; position < message.attachmentCount; position += 1) if (!done.has(`${message.id}:${position}`)) count += 1;
    return sum + count;
  }, 0);
  if (missing > 0 && !input.final) throw new AttachmentsIncompleteError(missing);
  const names = new Map(parsed.attachments.map((part) => [part.position, part.filename]));
  const settled = await settleAttachments(orm, inbound.id, names);
  return { stored, failed: Math.max(failed, missing), settled };
}
