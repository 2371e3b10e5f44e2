import { LockMode, type EntityManager } from '@mikro-orm/postgresql';
import { Broadcast } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { countBroadcastEvents } from './broadcast-send.repo.ts';

/** A broadcast with its event counters (GET answers carry live metrics). */
export interface BroadcastView {
  broadcast: Broadcast;
  counts: Record<string, number>;
}

export const broadcastNotFound = (id: string) => new AppError('not_found', `Broadcast ${id} does not exist.`);

/** The broadcast `id` of the workspace `em` is scoped to, locked for the transaction; 404 when there is none. */
export async function lockBroadcast(em: EntityManager, id: string): Promise<Broadcast> {
  const broadcast = await em.findOne(Broadcast, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!broadcast) throw broadcastNotFound(id);
  return broadcast;
}

/** `broadcasts` with their live event counters (a draft has none). */
export async function withCounts(em: EntityManager, orgId: string, broadcasts: Broadcast[]): Promise<BroadcastView[]> {
  const counts = await countBroadcastEvents(
    em,
    orgId,
    broadcasts.filter((b) => b.status !== 'draft').map((b) => b.id),
  );
  return broadcasts.map((broadcast) => ({ broadcast, counts: counts.get(broadcast.id) ?? {} }));
}

/** Newest first, keyset-paginated on (createdAt, id), with each one's live counters. */
export async function listBroadcasts(
  rootEm: EntityManager,
  orgId: string,
  page: { limit: number; after?: KeysetPosition | undefined },
): Promise<KeysetPage<Broadcast> & { counts: Map<string, Record<string, number>> }> {
  const em = scopeToOrg(rootEm, orgId);
  const found = await findKeysetPage(em, Broadcast, {}, page);
  const views = await withCounts(em, orgId, found.items);
  return { ...found, counts: new Map(views.map((view) => [view.broadcast.id, view.counts])) };
}

/** One broadcast with its live counters; 404 for another workspace's. */
export async function getBroadcast(rootEm: EntityManager, orgId: string, id: string): Promise<BroadcastView> {
  const em = scopeToOrg(rootEm, orgId);
  const broadcast = await em.findOne(Broadcast, { id: id.toLowerCase() });
  if (!broadcast) throw broadcastNotFound(id);
  const [view] = await withCounts(em, orgId, [broadcast]);
  return view!;
}
