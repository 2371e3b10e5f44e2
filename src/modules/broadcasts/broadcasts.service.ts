import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { SendCaller } from '../sandbox/sandbox.fns.ts';
import { countAudience } from './broadcast-send.repo.ts';
import { distinct } from './broadcasts.fns.ts';
import type { CreateBroadcastInput, LaunchBroadcastInput, UpdateBroadcastInput } from './broadcasts.schemas.ts';
import { cancelBroadcast } from './cancel-broadcast.ts';
import { createBroadcast, deleteBroadcast, updateBroadcast } from './draft-broadcasts.ts';
import { launchBroadcast } from './launch-broadcast.ts';
import { getBroadcast, listBroadcasts } from './read-broadcasts.ts';

export type { BroadcastView } from './read-broadcasts.ts';

/**
 * Broadcasts of one workspace: drafts, then their launch and cancel. A draft targets segments of
 * its workspace and sends from one of its domains (verified or not yet: drafts may be prepared
 * before DNS is done); launching requires the domain verified and not paused, and hands the
 * broadcast to its workflow (`broadcast:<id>`, workflows/broadcasts.ts), which queues the
 * audience on the domain's actor. States: draft → scheduled → sending → sent, or cancelled
 * (by the caller) or failed (by Herald). The use cases live in files of their own
 * (read-, draft-, launch-, cancel-broadcast(s).ts); this factory wires them to their dependencies.
 */
export function createBroadcastsService({
  orm,
  temporal,
  config,
  logger,
  clock = () => new Date(),
}: {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal' | 'encryptionKey'>;
  logger: Logger;
  clock?: () => Date;
}) {
  return {
    listBroadcasts: (orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) => listBroadcasts(orm.em, orgId, page),
    getBroadcast: (orgId: string, id: string) => getBroadcast(orm.em, orgId, id),

    /**
     * How many contacts of the workspace a broadcast to `segmentIds` would reach if sent now
     * (active, not suppressed for every stream or for `stream`, one message per contact; ids of
     * other workspaces count nothing).
     * The send takes its audience again at its send time, so this is a forecast.
     */
    async countAudience(orgId: string, segmentIds: readonly string[], stream = 'broadcast'): Promise<number> {
      return countAudience(scopeToOrg(orm.em, orgId), orgId, distinct(segmentIds), clock(), stream);
    },

    launchBroadcast: (orgId: string, id: string, input: LaunchBroadcastInput, caller: SendCaller) =>
      launchBroadcast({ em: orm.em, temporal, config, now: clock() }, orgId, id, input, caller),
    cancelBroadcast: (orgId: string, id: string) => cancelBroadcast({ em: orm.em, temporal, logger, clock }, orgId, id),
    updateBroadcast: (orgId: string, id: string, input: UpdateBroadcastInput) => updateBroadcast(orm.em, clock(), orgId, id, input),
    deleteBroadcast: (orgId: string, id: string) => deleteBroadcast(orm.em, orgId, id),
    createBroadcast: (orgId: string, input: CreateBroadcastInput) => createBroadcast(orm.em, clock(), orgId, input),
  };
}

export type BroadcastsService = ReturnType<typeof createBroadcastsService>;
