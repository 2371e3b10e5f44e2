import type { KeysetPage, KeysetPosition } from '../../db/keyset.ts';
import type { KeyContext } from '../modules/auth/key-context.ts';
import type { CursorCodec } from './cursor.ts';
import { JsonText } from './envelope.ts';
import type { RouteResult } from './route.ts';

export interface PageRequest {
  limit: number;
  after: KeysetPosition | undefined;
}

/** Turns `?limit&cursor` into a keyset request for one list of the workspace of the caller. */
export function pageRequest(
  codec: CursorCodec,
  list: string,
  caller: KeyContext,
  query: { limit: number; cursor?: string | undefined },
): PageRequest {
  return { limit: query.limit, after: query.cursor ? codec.decode(list, caller.orgId, query.cursor) : undefined };
}

/** Where a row sits in a (createdAt, id) keyset: the default for every list. */
function createdAtPosition(item: unknown): KeysetPosition {
  const row = item as { id: string; createdAt: Date };
  return { sortValue: row.createdAt, id: row.id };
}

/**
 * The whole of a list route: decodes `?limit&cursor` for the list, loads one keyset page,
 * serializes its items, and answers `meta.pagination` with a `next_cursor` after the last item.
 */
export async function listResult<T, E extends object = object>(
  options: {
    cursors: CursorCodec;
    list: string;
    caller: KeyContext;
    query: { limit: number; cursor?: string | undefined };
    /** Keyset position of an item, when items are not rows sorted on (createdAt, id). */
    position?: (item: T) => KeysetPosition;
    /**
     * For a list that is polled: `next_cursor` follows the last item of every non-empty page,
     * the last one included, so a client resumes from it later and sees only what came after.
     */
    resumable?: boolean;
  },
  load: (request: PageRequest) => Promise<KeysetPage<T> & E>,
  serialize: (item: T, page: KeysetPage<T> & E) => unknown,
): Promise<RouteResult> {
  const request = pageRequest(options.cursors, options.list, options.caller, options.query);
  const page = await load(request);
  const last = page.items.at(-1);
  const position = options.position ?? createdAtPosition;
  const cursorAfter = (page.hasMore || options.resumable === true) && last !== undefined ? position(last) : null;
  return pageResult(
    options,
    request,
    page.items.map((item) => serialize(item, page)),
    page.hasMore,
    cursorAfter,
  );
}

/** The answer of a list route: its items and `meta.pagination`, with a `next_cursor` at `cursorAfter` (none when null). */
function pageResult(
  options: { cursors: CursorCodec; list: string; caller: KeyContext },
  request: PageRequest,
  data: unknown,
  hasMore: boolean,
  cursorAfter: KeysetPosition | null,
): RouteResult {
  return {
    status: 200,
    data,
    pagination: {
      limit: request.limit,
      has_more: hasMore,
      next_cursor: cursorAfter ? options.cursors.encode(options.list, options.caller.orgId, cursorAfter) : null,
    },
  };
}

/**
 * listResult for a list whose page arrives as JSON text (built by PostgreSQL, see
 * contacts.repo.ts): the items go into the envelope as they are.
 */
export async function listJsonResult(
  options: { cursors: CursorCodec; list: string; caller: KeyContext; query: { limit: number; cursor?: string | undefined } },
  load: (request: PageRequest) => Promise<{ json: string; hasMore: boolean; last: KeysetPosition | null }>,
): Promise<RouteResult> {
  const request = pageRequest(options.cursors, options.list, options.caller, options.query);
  const page = await load(request);
  return pageResult(options, request, new JsonText(page.json), page.hasMore, page.hasMore ? page.last : null);
}

/**
 * A filtered list's filters (the query without `limit` and `cursor`) and the name its cursors
 * are signed for: one per filter combination, so a cursor replayed with other filters is
 * refused instead of silently skipping rows.
 */
export function filteredList<Q extends { limit: number; cursor?: string | undefined }>(
  list: string,
  query: Q,
): { list: string; filters: Omit<Q, 'limit' | 'cursor'> } {
  const { limit: _limit, cursor: _cursor, ...filters } = query;
  return { list: `${list}:${JSON.stringify(filters)}`, filters };
}
