import { LockMode, type MikroORM } from '@mikro-orm/postgresql';
import type { BroadcastSendInput } from '../../../workflows/broadcasts.ts';
import type { SendDomainInput } from '../../../workflows/send-domain.ts';
import { Broadcast } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Logger } from '../../logger.ts';
import { recordEvent } from '../events/events.fns.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';

/** What the steps of a broadcast's send need (createBroadcastSender's dependencies, page size resolved). */
export interface BroadcastSendDeps {
  orm: MikroORM;
  logger: Logger;
  /** Signal-with-start of sending-domain actors (src/temporal/actor-wake.ts). */
  wakeDomainActors: (domains: SendDomainInput[]) => Promise<void>;
  pageSize: number;
}

export interface BroadcastState {
  status: string;
  /** Epoch ms of `scheduled_at` for a scheduled broadcast. */
  scheduledAtMs: number | null;
  audienceWritten: boolean;
}

/** A fresh entity manager scoped to the workspace. */
export const orgEm = (deps: Pick<BroadcastSendDeps, 'orm'>, orgId: string) => scopeToOrg(deps.orm.em.fork(), orgId);

/** The broadcast as committed (null once deleted). */
export async function loadBroadcast(deps: Pick<BroadcastSendDeps, 'orm'>, input: BroadcastSendInput): Promise<Broadcast | null> {
  return orgEm(deps, input.orgId).findOne(Broadcast, { id: input.broadcastId }, { refresh: true });
}

/** Moves the broadcast from one status to the next (only from `from`), with its event; false when it was not in `from`. */
export async function moveBroadcast(
  deps: Pick<BroadcastSendDeps, 'orm'>,
  input: BroadcastSendInput,
  from: string,
  to: 'sending' | 'sent' | 'failed',
  changes: Partial<Broadcast> = {},
): Promise<boolean> {
  return orgEm(deps, input.orgId).transactional(async (tx) => {
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
