import { PassThrough, type Readable } from 'node:stream';
import type { MikroORM } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { BlobSizeError, type BlobStore } from '../../blob/blob-store.ts';
import type { Logger } from '../../logger.ts';
import type { DatabaseOutage } from '../../db/outage.ts';
import { createGroupCommit } from '../../queue/group-commit.ts';
import { recordReceived, type ReceivedInbound } from './inbound-queue.repo.ts';

/** What the SMTP conversation says about a message besides its bytes. */
export interface InboundEnvelope {
  mailFrom: string;
  rcptTo: string[];
  remoteAddress: string | null;
  clientHostname: string | null;
  heloName: string | null;
  tls: boolean;
}

export type IntakeResult =
  /** draining: the inbound actor's drain was running at the commit (it was poked; no wake-up needed). */
  { status: 'accepted'; id: string; sizeBytes: number; draining: boolean } | { status: 'too_large' } | { status: 'failed'; reason: string };

export interface InboundIntakeDeps {
  orm: MikroORM;
  /** null when BLOB_DIR is empty: every message is refused with a transient failure. */
  blobs: BlobStore | null;
  maxBytes: number;
  logger: Logger;
  /** PostgreSQL outages: a row that cannot be written during one is logged once per outage. */
  outage?: DatabaseOutage;
}

/** `inbound/<yyyy>/<mm>/<dd>/<id>.eml`, by the UTC day of receipt. */
export function inboundBlobKey(id: string, at: Date): string {
  const [yyyy, mm, dd] = at.toISOString().slice(0, 10).split('-');
  return `inbound/${yyyy}/${mm}/${dd}/${id}.eml`;
}

/** Lets the rest of a DATA stream flow to nowhere and resolves when it has ended. */
function drain(stream: Readable): Promise<void> {
  if (stream.readableEnded || stream.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('end', resolve);
    stream.once('close', resolve);
    stream.once('error', () => resolve());
    stream.resume();
  });
}

/** A raw row waiting in the group commit, with what its group's statement answered. */
interface PendingRow {
  message: ReceivedInbound;
  draining: boolean;
  error: Error | null;
}

/** Raw rows written together at most. */
const RECORD_GROUP_MAX = 64;

/**
 * Records raw rows by group commit (src/queue/group-commit.ts): the rows of the sessions whose
 * DATA ends while a statement is under way are written together by the next one, so
 * concurrent sessions share a statement and its commit. Each caller resolves only once its own
 * row is committed. A group that fails is written again row by row, so one row PostgreSQL
 * refuses fails only its own session.
 */
function createReceivedRecorder(orm: MikroORM) {
  const group = createGroupCommit<PendingRow>(
    async (rows) => {
      try {
        const { draining } = await recordReceived(
          orm.em.fork(),
          rows.map((row) => row.message),
        );
        for (const row of rows) row.draining = draining;
      } catch (error) {
        if (rows.length === 1) throw error;
        for (const row of rows) {
          try {
            row.draining = (await recordReceived(orm.em.fork(), [row.message])).draining;
          } catch (rowError) {
            row.error = rowError instanceof Error ? rowError : new Error(String(rowError));
          }
        }
      }
    },
    { maxItems: RECORD_GROUP_MAX, delayMs: 0 },
  );
  return {
    /** Resolves once `message` is committed, with whether the inbound drain was running then. */
    async record(message: ReceivedInbound): Promise<{ draining: boolean }> {
      const row: PendingRow = { message, draining: false, error: null };
      await group.add(row);
      if (row.error) throw row.error;
      return { draining: row.draining };
    },
  };
}

/**
 * Intake of one message at DATA: streams the bytes into the blob store (never whole in memory),
 * then records the InboundMessage row, due at once for the inbound actor, and NOTIFYs the actor's
 * drain in the same statement (inbound-queue.repo.ts recordReceived; rows of concurrent sessions
 * share one statement, createReceivedRecorder). Only a fully stored and recorded message is `accepted`
 * (the caller then answers 250); anything else leaves nothing behind (a blob whose row could not
 * be written is deleted) so the sender's retry starts clean. Over `maxBytes` the rest of the
 * stream is drained and the result is `too_large`.
 */
export function createInboundIntake({ orm, blobs, maxBytes, logger, outage }: InboundIntakeDeps) {
  const recorder = createReceivedRecorder(orm);
  return {
    async receive(stream: Readable, envelope: InboundEnvelope): Promise<IntakeResult> {
      if (!blobs) {
        await drain(stream);
        return { status: 'failed', reason: 'no blob store configured (BLOB_DIR is empty)' };
      }
      const receivedAt = new Date();
      const id = newId();
      const key = inboundBlobKey(id, receivedAt);
      // The smtp-server stream is piped, not handed over: a failed put must not destroy it,
      // since the rest of the DATA still has to be read before the reply.
      const body = new PassThrough();
      stream.pipe(body);
      let stored;
      try {
        stored = await blobs.put(key, body, { maxBytes });
      } catch (error) {
        stream.unpipe(body);
        await drain(stream);
        if (error instanceof BlobSizeError) return { status: 'too_large' };
        logger.error('inbound: storing the raw message failed', { error });
        return { status: 'failed', reason: 'blob store failure' };
      }
      let draining: boolean;
      try {
        ({ draining } = await recorder.record({
          id,
          blobKey: key,
          sizeBytes: stored.sizeBytes,
          sha256: stored.sha256,
          mailFrom: envelope.mailFrom.slice(0, 320),
          rcptTo: envelope.rcptTo,
          remoteAddress: envelope.remoteAddress?.slice(0, 64) ?? null,
          clientHostname: envelope.clientHostname?.slice(0, 253) ?? null,
          heloName: envelope.heloName?.slice(0, 253) ?? null,
          tls: envelope.tls,
          receivedAt,
        }));
      } catch (error) {
        if (!outage?.report(error)) logger.error('inbound: recording the raw message failed', { error });
        await blobs
          .delete(key)
          .catch((deleteError: unknown) => logger.error('inbound: could not delete an unrecorded blob', { key, error: deleteError }));
        return { status: 'failed', reason: 'database failure' };
      }
      return { status: 'accepted', id, sizeBytes: stored.sizeBytes, draining };
    },
  };
}

export type InboundIntake = ReturnType<typeof createInboundIntake>;
