import { LockMode, type MikroORM } from '@mikro-orm/postgresql';
import type { BroadcastSendInput } from '../../../workflows/broadcasts.ts';
import type { SendDomainInput } from '../../../workflows/send-domain.ts';
import { Broadcast, Domain, MessageStream } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Logger } from '../../logger.ts';
import { SEND_WAKE_CHANNEL } from '../../queue/wakes.ts';
import { recordEvent } from '../events/events.fns.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { takeStreamRoom } from '../streams/streams.repo.ts';
import { cancelQueuedMessages, hasOpenMessages, notifyDomainDrain, readAudiencePage, writeAudiencePage } from './broadcast-send.repo.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';

/** Contacts read and messages written per statement while the audience is written. */
export const AUDIENCE_PAGE_SIZE = 2_000;
/** Queued messages of a cancelled broadcast cancelled per statement. */
const CANCEL_PAGE_SIZE = 5_000;

/** Thrown inside a page's transaction when the broadcast stopped sending, to roll the page back. */
class NotSending extends Error {}

export interface BroadcastState {
  status: string;
  /** Epoch ms of `scheduled_at` for a scheduled broadcast. */
  scheduledAtMs: number | null;
  audienceWritten: boolean;
}

/**
 * The steps of a broadcast's send, as its workflow (`broadcast:<id>`) runs them as activities.
 * Every step reads the broadcast's committed state and is idempotent, so a retried or replayed
 * step redoes nothing: the audience is written from its checkpoint, a page written twice adds
 * nothing, a finished broadcast stays finished.
 */
export function createBroadcastSender(deps: {
  orm: MikroORM;
  logger: Logger;
  /** Signal-with-start of sending-domain actors (src/temporal/actor-wake.ts). */
  wakeDomainActors: (domains: SendDomainInput[]) => Promise<void>;
  pageSize?: number;
}) {
  const pageSize = deps.pageSize ?? AUDIENCE_PAGE_SIZE;
  const em = (orgId: string) => scopeToOrg(deps.orm.em.fork(), orgId);

  async function load(input: BroadcastSendInput): Promise<Broadcast | null> {
    return em(input.orgId).findOne(Broadcast, { id: input.broadcastId }, { refresh: true });
  }

  /** Moves the broadcast from one status to the next (only from `from`), with its event; false when it was not in `from`. */
  async function move(
    input: BroadcastSendInput,
    from: string,
    to: 'sending' | 'sent' | 'failed',
    changes: Partial<Broadcast> = {},
  ): Promise<boolean> {
    return em(input.orgId).transactional(async (tx) => {
      const broadcast = await tx.findOne(Broadcast, { id: input.broadcastId, status: from }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!broadcast) return false;
      Object.assign(broadcast, changes, { status: to });
      await tx.flush();
      recordEvent(tx, input.orgId, `broadcast.${to}`, {
        broadcast: serializeBroadcast(broadcast),
        ...(to === 'failed' ? { reason: broadcast.failureReason ?? 'unknown' } : {}),
      });
      return true;
    });
  }

  /** The daily budget of the broadcast's stream, or null when it has none. */
  async function streamCap(orgId: string, stream: string): Promise<number | null> {
    const row = await em(orgId).findOne(MessageStream, { name: stream }, { refresh: true });
    return row?.dailyCap ?? null;
  }

  async function wakeDomain(orgId: string, domainId: string): Promise<void> {
    const draining = await notifyDomainDrain(deps.orm.em.fork(), orgId, domainId, SEND_WAKE_CHANNEL);
    if (!draining) await deps.wakeDomainActors([{ orgId, domainId }]);
  }

  return {
    async state(input: BroadcastSendInput): Promise<BroadcastState> {
      const broadcast = await load(input);
      if (!broadcast) return { status: 'deleted', scheduledAtMs: null, audienceWritten: false };
      return {
        status: broadcast.status,
        scheduledAtMs: broadcast.scheduledAt?.getTime() ?? null,
        audienceWritten: broadcast.audienceWrittenAt !== null,
      };
    },

    /** A scheduled broadcast whose time has come starts sending (its audience is the contacts as of now). */
    async begin(input: BroadcastSendInput): Promise<BroadcastState> {
      await move(input, 'scheduled', 'sending', { sendingAt: new Date() });
      const broadcast = await load(input);
      return { status: broadcast?.status ?? 'deleted', scheduledAtMs: null, audienceWritten: broadcast?.audienceWrittenAt != null };
    },

    /**
     * Writes the audience to the sending domain's queue a page at a time from the checkpoint,
     * waking the domain's drain after each page, until the audience is all written (or the
     * broadcast stopped sending). A stream with a daily budget takes each page from it: once
     * the day's budget is spent the pass ends with `resumeAtMs` (the next UTC day), and the
     * workflow writes on from the checkpoint then. `heartbeat` is called after every page.
     */
    async writeAudience(
      input: BroadcastSendInput,
      heartbeat: () => void,
    ): Promise<{ status: string; written: number; resumeAtMs?: number }> {
      let written = 0;
      let domain: Domain | null = null;
      let cap: { value: number | null } | undefined;
      for (;;) {
        const broadcast = await load(input);
        if (!broadcast || broadcast.status !== 'sending') return { status: broadcast?.status ?? 'deleted', written };
        if (broadcast.audienceWrittenAt) return { status: broadcast.status, written };
        if (!broadcast.sendingAt || !broadcast.domainId)
          throw new Error(`broadcast ${broadcast.id} is sending without a send time or domain`);
        const sendingDomain = (domain ??= await em(input.orgId).findOneOrFail(Domain, { id: broadcast.domainId }));
        const budget = (cap ??= { value: await streamCap(input.orgId, broadcast.stream) }).value;
        const tx = deps.orm.em.fork();
        const read = await readAudiencePage(
          tx,
          input.orgId,
          { segmentIds: broadcast.segmentIds, stream: broadcast.stream },
          {
            sendingAt: broadcast.sendingAt,
            afterAt: broadcast.audienceAfterAt ?? null,
            afterId: broadcast.audienceAfterId ?? null,
          },
          pageSize,
        );
        const now = new Date();
        // A page the broadcast no longer takes (cancelled meanwhile) gives its budget back: the transaction rolls back.
        const outcome = await tx
          .transactional(async (page) => {
            const room =
              budget === null || read.length === 0
                ? read.length
                : await takeStreamRoom(page, {
                    orgId: input.orgId,
                    stream: broadcast.stream,
                    day: utcDay(now),
                    want: read.length,
                    cap: budget,
                  });
            const members = read.slice(0, room);
            if (members.length === 0) return { members, count: 0 };
            const count = await writeAudiencePage(
              page,
              {
                orgId: input.orgId,
                broadcastId: broadcast.id,
                domainId: sendingDomain.id,
                domain: sendingDomain.domain,
                fromEmail: broadcast.fromEmail,
                fromName: broadcast.fromName,
                replyTo: broadcast.replyTo ?? null,
                subject: broadcast.subject,
                stream: broadcast.stream,
              },
              members,
            );
            if (count === null) throw new NotSending();
            return { members, count };
          })
          .catch((error: unknown) => {
            if (error instanceof NotSending) return null;
            throw error;
          });
        if (!outcome) continue;
        const { members, count } = outcome;
        if (members.length > 0) {
          written += count;
          await wakeDomain(input.orgId, sendingDomain.id);
        }
        if (members.length < read.length) {
          deps.logger.info('broadcast waits for its stream budget', { broadcastId: broadcast.id, stream: broadcast.stream });
          return { status: broadcast.status, written, resumeAtMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) };
        }
        if (read.length < pageSize) {
          await em(input.orgId).nativeUpdate(Broadcast, { id: broadcast.id, status: 'sending' }, { audienceWrittenAt: new Date() });
          if (written === 0 && broadcast.recipientCount === 0)
            deps.logger.info('broadcast audience is empty', { broadcastId: broadcast.id });
        }
        heartbeat();
      }
    },

    /**
     * Where the send stands: a sending broadcast whose audience is written and whose messages
     * have all left the queue is sent; a cancelled one has its queued messages cancelled (in
     * pages). Returns the status after it.
     */
    async refresh(input: BroadcastSendInput): Promise<BroadcastState> {
      const broadcast = await load(input);
      if (!broadcast) return { status: 'deleted', scheduledAtMs: null, audienceWritten: false };
      if (broadcast.status === 'cancelled') {
        while ((await cancelQueuedMessages(deps.orm.em.fork(), input.orgId, broadcast.id, CANCEL_PAGE_SIZE)) > 0);
      } else if (
        broadcast.status === 'sending' &&
        broadcast.audienceWrittenAt &&
        broadcast.domainId &&
        !(await hasOpenMessages(deps.orm.em.fork(), input.orgId, broadcast.id, broadcast.domainId))
      ) {
        await move(input, 'sending', 'sent', { completedAt: new Date() });
      }
      const after = await load(input);
      return { status: after?.status ?? 'deleted', scheduledAtMs: null, audienceWritten: after?.audienceWrittenAt != null };
    },

    /** The send cannot go on (its steps kept failing): the broadcast fails; messages already queued still go. */
    async fail(input: BroadcastSendInput, reason: string): Promise<void> {
      for (const from of ['scheduled', 'sending']) {
        if (await move(input, from, 'failed', { failureReason: reason.slice(0, 1024), completedAt: new Date() })) return;
      }
    },
  };
}

export type BroadcastSender = ReturnType<typeof createBroadcastSender>;
