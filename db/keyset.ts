import type { EntityManager, EntityName, FilterQuery, FindOptions } from '@mikro-orm/postgresql';

export type SortField = 'createdAt' | 'updatedAt';

/** Where a page starts: the sort value and id of the last row of the previous page. */
export interface KeysetPosition {
  sortValue: Date;
  id: string;
  /**
   * The sort value at the database's full precision (PostgreSQL text of a microsecond
   * timestamp, e.g. `2026-11-21T08:00:00.123456Z`), for lists that compare in SQL on it:
   * `sortValue` is a JS Date (milliseconds), which would skip or repeat rows within a millisecond.
   */
  sortText?: string;
}

export interface KeysetPage<T> {
  items: T[];
  hasMore: boolean;
}

/**
 * One page of a keyset scan over (sortField, id), newest first on createdAt unless told
 * otherwise: the cost of a page does not depend on how deep it is. Reads `limit + 1` rows to
 * know whether another page exists.
 */
export async function findKeysetPage<T extends { id: string; createdAt: Date }>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  page: { limit: number; after?: KeysetPosition | undefined },
  options: {
    sortField?: SortField;
    direction?: 'asc' | 'desc';
    /** Filter switches for this query, e.g. a deliberate cross-tenant read whose `where` confines it. */
    filters?: FindOptions<T>['filters'];
  } = {},
): Promise<KeysetPage<T>> {
  const { limit, after } = page;
  const { sortField = 'createdAt', direction = 'desc', filters } = options;
  const beyond = direction === 'asc' ? '$gt' : '$lt';
  const conditions: unknown[] = [where];
  if (after) {
    conditions.push({
      $or: [{ [sortField]: { [beyond]: after.sortValue } }, { [sortField]: after.sortValue, id: { [beyond]: after.id } }],
    });
  }
  const rows = await em.find(entity, { $and: conditions } as FilterQuery<T>, {
    orderBy: { [sortField]: direction, id: direction } as never,
    limit: limit + 1,
    ...(filters !== undefined ? { filters } : {}),
  });
  return { items: rows.slice(0, limit), hasMore: rows.length > limit };
}
