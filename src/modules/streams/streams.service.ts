import type { MikroORM } from '@mikro-orm/postgresql';
import { BUILT_IN_STREAMS, MessageStream } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { utcDay } from '../sends/sends.fns.ts';
import { isBuiltInStream } from './streams.fns.ts';
import { countStreamsToday } from './streams.repo.ts';
import type { CreateStreamInput, UpdateStreamInput } from './streams.schemas.ts';
import type { StreamView } from './streams.serializer.ts';

const notFound = (name: string) => new AppError('not_found', `Stream ${name} was not found.`);

/**
 * A workspace's message streams (Herald extension): the built-in `transactional` and
 * `broadcast` streams, which always exist, and the custom ones it creates. A built-in stream's
 * row, when there is one, holds only its settings (description, daily budget).
 */
export function createStreamsService(deps: { orm: MikroORM; now?: () => Date }) {
  const now = deps.now ?? (() => new Date());
  const em = (orgId: string) => scopeToOrg(deps.orm.em, orgId);

  const view = (row: MessageStream | undefined, name: string, counts: Map<string, number>): StreamView => ({
    name,
    kind: isBuiltInStream(name) ? name : (row?.kind ?? 'transactional'),
    builtIn: isBuiltInStream(name),
    description: row?.description ?? '',
    dailyCap: row?.dailyCap ?? null,
    sentToday: counts.get(name) ?? 0,
    createdAt: isBuiltInStream(name) ? null : (row?.createdAt ?? null),
  });

  return {
    /** Every stream of the workspace: the built-in ones first, then the custom ones by name. */
    async listStreams(orgId: string): Promise<StreamView[]> {
      const scoped = em(orgId);
      const rows = await scoped.find(MessageStream, {}, { orderBy: { name: 'asc' } });
      const counts = await countStreamsToday(scoped, orgId, utcDay(now()));
      const byName = new Map(rows.map((row) => [row.name, row]));
      const builtIn = Object.values(BUILT_IN_STREAMS).map((name) => view(byName.get(name), name, counts));
      const custom = rows.filter((row) => !isBuiltInStream(row.name)).map((row) => view(row, row.name, counts));
      return [...builtIn, ...custom];
    },

    /** One stream by name, or 404. */
    async getStream(orgId: string, name: string): Promise<StreamView> {
      const scoped = em(orgId);
      const row = (await scoped.findOne(MessageStream, { name })) ?? undefined;
      if (!row && !isBuiltInStream(name)) throw notFound(name);
      return view(row, name, await countStreamsToday(scoped, orgId, utcDay(now())));
    },

    /** Creates a custom stream; 409 when the name is taken (the built-in names always are). */
    async createStream(orgId: string, input: CreateStreamInput): Promise<StreamView> {
      const scoped = em(orgId);
      if (isBuiltInStream(input.name) || (await scoped.count(MessageStream, { name: input.name })) > 0) {
        throw new AppError('conflict', `A stream named ${input.name} already exists.`, { reason: 'STREAM_EXISTS', name: input.name });
      }
      const row = scoped.create(MessageStream, {
        orgId,
        name: input.name,
        kind: input.kind,
        description: input.description ?? '',
        dailyCap: input.daily_cap ?? null,
      });
      await scoped.flush();
      return view(row, row.name, new Map());
    },

    /** Changes a stream's description or daily budget (a built-in stream's too). */
    async updateStream(orgId: string, name: string, input: UpdateStreamInput): Promise<StreamView> {
      const scoped = em(orgId);
      let row = await scoped.findOne(MessageStream, { name });
      if (!row) {
        if (!isBuiltInStream(name)) throw notFound(name);
        row = scoped.create(MessageStream, { orgId, name, kind: name, description: '', dailyCap: null });
      }
      if (input.description !== undefined) row.description = input.description;
      if (input.daily_cap !== undefined) row.dailyCap = input.daily_cap;
      await scoped.flush();
      return this.getStream(orgId, name);
    },

    /**
     * Deletes a custom stream: later sends naming it are refused; emails already accepted keep
     * its name. 409 for a built-in stream, 404 for an unknown one.
     */
    async deleteStream(orgId: string, name: string): Promise<void> {
      if (isBuiltInStream(name)) {
        throw new AppError('conflict', `The built-in stream ${name} cannot be deleted.`, { reason: 'STREAM_BUILT_IN', name });
      }
      const deleted = await em(orgId).nativeDelete(MessageStream, { name });
      if (deleted === 0) throw notFound(name);
    },
  };
}

export type StreamsService = ReturnType<typeof createStreamsService>;
