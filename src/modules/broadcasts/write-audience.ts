import type { EntityManager } from '@mikro-orm/postgresql';
import type { BroadcastSendInput } from '../../../workflows/broadcasts.ts';
import { Broadcast, Domain, MessageStream } from '../../../db/entities/index.ts';
import { SEND_WAKE_CHANNEL } from '../../queue/wakes.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { takeStreamRoom } from '../streams/streams.repo.ts';
import { notifyDomainDrain, readAudiencePage, writeAudiencePage, type AudienceMember } from './broadcast-send.repo.ts';
import { loadBroadcast, orgEm, type BroadcastSendDeps } from './broadcast-send-state.ts';

/** Thrown inside a page's transaction when the broadcast stopped sending, to roll the page back. */
class NotSending extends Error {}

/** The daily budget of the broadcast's stream, or null when it has none. */
async function streamCap(deps: BroadcastSendDeps, orgId: string, stream: string): Promise<number | null> {
  const row = await orgEm(deps, orgId).findOne(MessageStream, { name: stream }, { refresh: true });
  return row?.dailyCap ?? null;
}

async function wakeDomain(deps: BroadcastSendDeps, orgId: string, domainId: string): Promise<void> {
  const draining = await notifyDomainDrain(deps.orm.em.fork(), orgId, domainId, SEND_WAKE_CHANNEL);
  if (!draining) await deps.wakeDomainActors([{ orgId, domainId }]);
}

/**
 * Queues what the stream's budget leaves room for of one page read, in one transaction; null when
 * the broadcast no longer takes it (cancelled meanwhile): the page and its budget roll back.
 */
async function writePage(
  tx: EntityManager,
  orgId: string,
  broadcast: Broadcast,
  sendingDomain: Domain,
  read: AudienceMember[],
  budget: number | null,
  now: Date,
): Promise<{ members: AudienceMember[]; count: number } | null> {
  return tx
    .transactional(async (page) => {
      const room =
        budget === null || read.length === 0
          ? read.length
          : await takeStreamRoom(page, { orgId, stream: broadcast.stream, day: utcDay(now), want: read.length, cap: budget });
      const members = read.slice(0, room);
      if (members.length === 0) return { members, count: 0 };
      const count = await writeAudiencePage(
        page,
        {
          orgId,
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
}

/**
 * Writes the audience to the sending domain's queue a page at a time from the checkpoint,
 * waking the domain's drain after each page, until the audience is all written (or the
 * broadcast stopped sending). A stream with a daily budget takes each page from it: once
 * the day's budget is spent the pass ends with `resumeAtMs` (the next UTC day), and the
 * workflow writes on from the checkpoint then. `heartbeat` is called after every page.
 */
export async function writeAudience(
  deps: BroadcastSendDeps,
  input: BroadcastSendInput,
  heartbeat: () => void,
): Promise<{ status: string; written: number; resumeAtMs?: number }> {
  let written = 0;
  let domain: Domain | null = null;
  let cap: { value: number | null } | undefined;
  for (;;) {
    const broadcast = await loadBroadcast(deps, input);
    if (!broadcast || broadcast.status !== 'sending') return { status: broadcast?.status ?? 'deleted', written };
    if (broadcast.audienceWrittenAt) return { status: broadcast.status, written };
    if (!broadcast.sendingAt || !broadcast.domainId) throw new Error(`broadcast ${broadcast.id} is sending without a send time or domain`);
    const sendingDomain = (domain ??= await orgEm(deps, input.orgId).findOneOrFail(Domain, { id: broadcast.domainId }));
    const budget = (cap ??= { value: await streamCap(deps, input.orgId, broadcast.stream) }).value;
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
      deps.pageSize,
    );
    const now = new Date();
    const outcome = await writePage(tx, input.orgId, broadcast, sendingDomain, read, budget, now);
    if (!outcome) continue;
    const { members, count } = outcome;
    if (members.length > 0) {
      written += count;
      await wakeDomain(deps, input.orgId, sendingDomain.id);
    }
    if (members.length < read.length) {
      deps.logger.info('broadcast waits for its stream budget', { broadcastId: broadcast.id, stream: broadcast.stream });
      return { status: broadcast.status, written, resumeAtMs: Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1) };
    }
    if (read.length < deps.pageSize) {
      await orgEm(deps, input.orgId).nativeUpdate(Broadcast, { id: broadcast.id, status: 'sending' }, { audienceWrittenAt: new Date() });
      if (written === 0 && broadcast.recipientCount === 0) deps.logger.info('broadcast audience is empty', { broadcastId: broadcast.id });
    }
    heartbeat();
  }
}
