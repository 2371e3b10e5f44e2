/**
 * The per-stream daily counters behind a stream's budget (stream_daily_sends). Raw SQL is
 * outside the tenant filter, so every statement names the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { MessageStream } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { isBuiltInStream } from './streams.fns.ts';

const secondsUntilNextUtcDay = (now: Date) => {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1);
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000));
};

/**
 * Counts `count` recipients against the stream's budget for UTC day `day`, in the caller's
 * transaction (so a refusal later in it gives them back): 429 rate_limited
 * (details.reason STREAM_BUDGET_REACHED) when they would take the day past `cap`.
 */
export async function reserveStreamBudget(
  em: EntityManager,
  request: { orgId: string; stream: string; day: string; count: number; cap: number; now: Date },
): Promise<void> {
  const { orgId, stream, day, count, cap } = request;
  const rows = await em.execute<{ count: number }[]>(
    `insert into stream_daily_sends (org_id, stream, day, count) select :org, :stream, :day, :count where :count <= :cap
     on conflict (org_id, stream, day) do update set count = stream_daily_sends.count + excluded.count
      where stream_daily_sends.count + excluded.count <= :cap
     returning count`,
    { org: orgId, stream, day, count, cap },
  );
  if (rows.length > 0) return;
  const [used] = await em.execute<{ count: number }[]>(
    `select count from stream_daily_sends where org_id = :org and stream = :stream and day = :day`,
    { org: orgId, stream, day },
  );
  throw new AppError(
    'rate_limited',
    `The daily budget of stream ${stream} (${cap} recipients per UTC day) is reached for ${day}.`,
    { reason: 'STREAM_BUDGET_REACHED', stream, day, cap, used: Number(used?.count ?? 0), requested: count },
    { retryAfterSeconds: secondsUntilNextUtcDay(request.now) },
  );
}

/** Recipients each of the workspace's streams accepted on UTC day `day`, by stream name. */
export async function countStreamsToday(em: EntityManager, orgId: string, day: string): Promise<Map<string, number>> {
  const rows = await em.execute<{ stream: string; count: number }[]>(
    `select stream, count from stream_daily_sends where org_id = :org and day = :day`,
    { org: orgId, day },
  );
  return new Map(rows.map((row) => [row.stream, Number(row.count)]));
}

/** 422 UNKNOWN_STREAM at `path` unless the workspace has a stream named `name` (built-in or its own); `em` is scoped to it. */
export async function assertStreamExists(em: EntityManager, name: string, path: string): Promise<void> {
  if (isBuiltInStream(name) || (await em.count(MessageStream, { name })) > 0) return;
  throw unknownStream(name, path, 'query');
}

/** The refusal of a stream name the workspace does not have. */
export function unknownStream(name: string, path: string, location: 'body' | 'query' = 'body'): AppError {
  return new AppError('unprocessable_entity', `This workspace has no message stream named ${name}.`, {
    reason: 'UNKNOWN_STREAM',
    fields: [{ path, location, type: 'unknown_stream', message: 'is not a stream of this workspace' }],
  });
}

/**
 * The broadcast-kind stream `name` of the workspace (`em` is scoped to it): the built-in
 * `broadcast` or a custom stream of kind broadcast, with its daily budget. 422 UNKNOWN_STREAM at
 * `path` when the workspace has no stream by that name, 422 STREAM_NOT_BROADCAST when it carries
 * transactional mail.
 */
export async function findBroadcastStream(
  em: EntityManager,
  name: string,
  path: string,
): Promise<{ name: string; dailyCap: number | null }> {
  const row = await em.findOne(MessageStream, { name });
  if (!row && !isBuiltInStream(name)) throw unknownStream(name, path);
  const kind = isBuiltInStream(name) ? name : row!.kind;
  if (kind !== 'broadcast') {
    throw new AppError(
      'unprocessable_entity',
      `Stream ${name} carries transactional mail; a broadcast needs a stream of the broadcast kind.`,
      {
        reason: 'STREAM_NOT_BROADCAST',
        fields: [{ path, location: 'body', type: 'stream_kind', message: 'is not a stream of the broadcast kind' }],
      },
    );
  }
  return { name, dailyCap: row?.dailyCap ?? null };
}

/**
 * Takes up to `want` recipients of the stream's budget for UTC day `day` (at most what is left
 * under `cap`), in the caller's transaction; returns how many it took (0 when the day is spent).
 * Broadcast audiences are written a page at a time, so a page is cut to what the budget allows.
 */
export async function takeStreamRoom(
  em: EntityManager,
  request: { orgId: string; stream: string; day: string; want: number; cap: number },
): Promise<number> {
  const { orgId, stream, day, want, cap } = request;
  const key = { org: orgId, stream, day };
  await em.execute(
    `insert into stream_daily_sends (org_id, stream, day, count) values (:org, :stream, :day, 0) on conflict (org_id, stream, day) do nothing`,
    key,
  );
  const [row] = await em.execute<{ count: number }[]>(
    `select count from stream_daily_sends where org_id = :org and stream = :stream and day = :day for update`,
    key,
  );
  const taken = Math.max(0, Math.min(want, cap - Number(row?.count ?? 0)));
  if (taken > 0) {
    await em.execute(`update stream_daily_sends set count = count + :taken where org_id = :org and stream = :stream and day = :day`, {
      ...key,
      taken,
    });
  }
  return taken;
}
