import type { MikroORM } from '@mikro-orm/postgresql';
import type { BroadcastSendInput } from '../../../workflows/broadcasts.ts';
import type { SendDomainInput } from '../../../workflows/send-domain.ts';
import type { Logger } from '../../logger.ts';
import { cancelQueuedMessages, hasOpenMessages } from './broadcast-send.repo.ts';
import { loadBroadcast, moveBroadcast, type BroadcastSendDeps, type BroadcastState } from './broadcast-send-state.ts';
import { writeAudience } from './write-audience.ts';

export type { BroadcastState } from './broadcast-send-state.ts';

/** Contacts read and messages written per statement while the audience is written. */
export const AUDIENCE_PAGE_SIZE = 2_000;
/** Queued messages of a cancelled broadcast cancelled per statement. */
const CANCEL_PAGE_SIZE = 5_000;

/**
 * The steps of a broadcast's send, as its workflow (`broadcast:<id>`) runs them as activities.
 * Every step reads the broadcast's committed state and is idempotent, so a retried or replayed
 * step redoes nothing: the audience is written from its checkpoint (write-audience.ts), a page
 * written twice adds nothing, a finished broadcast stays finished.
 */
export function createBroadcastSender(deps: {
  orm: MikroORM;
  logger: Logger;
  /** Signal-with-start of sending-domain actors (src/temporal/actor-wake.ts). */
  wakeDomainActors: (domains: SendDomainInput[]) => Promise<void>;
  pageSize?: number;
}) {
  const sendDeps: BroadcastSendDeps = { ...deps, pageSize: deps.pageSize ?? AUDIENCE_PAGE_SIZE };
  const load = (input: BroadcastSendInput) => loadBroadcast(sendDeps, input);

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
      await moveBroadcast(sendDeps, input, 'scheduled', 'sending', { sendingAt: new Date() });
      const broadcast = await load(input);
      return { status: broadcast?.status ?? 'deleted', scheduledAtMs: null, audienceWritten: broadcast?.audienceWrittenAt != null };
    },

    /** See write-audience.ts. */
    writeAudience: (input: BroadcastSendInput, heartbeat: () => void) => writeAudience(sendDeps, input, heartbeat),

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
        await moveBroadcast(sendDeps, input, 'sending', 'sent', { completedAt: new Date() });
      }
      const after = await load(input);
      return { status: after?.status ?? 'deleted', scheduledAtMs: null, audienceWritten: after?.audienceWrittenAt != null };
    },

    /** The send cannot go on (its steps kept failing): the broadcast fails; messages already queued still go. */
    async fail(input: BroadcastSendInput, reason: string): Promise<void> {
      for (const from of ['scheduled', 'sending']) {
        if (await moveBroadcast(sendDeps, input, from, 'failed', { failureReason: reason.slice(0, 1024), completedAt: new Date() })) return;
      }
    },
  };
}

export type BroadcastSender = ReturnType<typeof createBroadcastSender>;
