import type { KeysetPage, KeysetPosition, SortField } from '../../db/keyset.ts';
import type { KeyContext } from '../modules/auth/key-context.ts';
import type { CursorCodec } from './cursor.ts';
import type { Pagination } from './envelope.ts';

/** Turns `?limit&cursor` into a keyset request for one list of the caller's workspace. */
export function pageRequest(
  codec: CursorCodec,
  list: string,
  caller: KeyContext,
  query: { limit: number; cursor?: string | undefined },
): { limit: number; after: KeysetPosition | undefined } {
  return { limit: query.limit, after: query.cursor ? codec.decode(list, caller.orgId, query.cursor) : undefined };
}

/** `meta.pagination` for a page: `next_cursor` points after its last row. */
export function pagination<T extends { id: string } & Record<SortField, Date>>(
  codec: CursorCodec,
  list: string,
  caller: KeyContext,
  page: KeysetPage<T>,
  limit: number,
  sortField: SortField,
): Pagination {
  const last = page.items.at(-1);
  return {
    limit,
    has_more: page.hasMore,
    next_cursor: page.hasMore && last ? codec.encode(list, caller.orgId, { sortValue: last[sortField], id: last.id }) : null,
  };
}
