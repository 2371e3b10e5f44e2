import type { EntityManager } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import { broadcastChangedSignal, broadcastSendWorkflowId } from '../../../workflows/broadcasts.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { Logger } from '../../logger.ts';
import { recordEvent } from '../events/events.fns.ts';
import { CANCELLABLE_STATUSES } from './broadcasts.fns.ts';
import { serializeBroadcast } from './broadcasts.serializer.ts';
import { lockBroadcast, withCounts, type BroadcastView } from './read-broadcasts.ts';

/**
 * Cancels a scheduled or sending broadcast: from the commit on, no message of it is handed
 * off that was not already on its way (the drain skips them; the workflow cancels the
 * queued ones in pages). 409 BROADCAST_NOT_CANCELLABLE for a draft or a finished broadcast.
 */
export async function cancelBroadcast(
  deps: { em: EntityManager; temporal: Client; logger: Logger; clock: () => Date },
  orgId: string,
  id: string,
): Promise<BroadcastView> {
  const em = scopeToOrg(deps.em, orgId);
  const broadcast = await em.transactional(async (tx) => {
    const row = await lockBroadcast(tx, id);
    if (!CANCELLABLE_STATUSES.includes(row.status)) {
      throw new AppError('conflict', `Broadcast ${row.id} is ${row.status}; only a scheduled or sending broadcast can be cancelled.`, {
        reason: 'BROADCAST_NOT_CANCELLABLE',
        status: row.status,
      });
    }
    row.status = 'cancelled';
    row.cancelledAt = deps.clock();
    await tx.flush();
    recordEvent(tx, orgId, 'broadcast.cancelled', { broadcast: serializeBroadcast(row) });
    return row;
  });
  try {
    await deps.temporal.workflow.getHandle(broadcastSendWorkflowId(broadcast.id)).signal(broadcastChangedSignal);
  } catch (error) {
    // The workflow looks at the row on its own within seconds (or at its scheduled time).
    deps.logger.warn('broadcast workflow not signalled after cancel', { broadcastId: broadcast.id, error });
  }
  const [view] = await withCounts(em, orgId, [broadcast]);
  return view!;
}
