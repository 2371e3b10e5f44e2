/**
 * Live member counts of a page of segments, in one statement whatever the page size (no
 * query per segment). A `tag` segment counts `contacts.tags && segment.tags` within the
 * workspace: a bitmap scan of the GIN index on contacts.tags, so its cost follows the
 * segment's own size. `all` segments share one count of the workspace's contacts (an
 * uncorrelated sub-select, run once and only when the page holds one, via the org_id index);
 * a `static` segment reads its stored count (segments.member_count, kept exact by triggers
 * on segment_members in every membership write's transaction).
 *
 * The statements are Kysely queries through `workspaceDb`, which adds the workspace's
 * condition to every workspace table they name (segments, contacts, segment_members); the
 * parameters are values, bound by the driver.
 */
import { sql, type Kysely, type SelectQueryBuilder } from 'kysely';
import type { EntityManager, HeraldDb } from '../../../db/orm.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import { AppError } from '../../errors.ts';

/** The counting statement for some segments, on `db` (a `workspaceDb`: it adds the workspace to each table). */
export function segmentCountQuery(db: Kysely<HeraldDb>, segmentIds: readonly string[], cap?: number) {
  return db
    .selectFrom('segments as s')
    .select((eb) => {
      /** The count of `rows`, or of at most `cap` of them (a bounded read whatever the segment's size). */
      const countOf = <DB, TB extends keyof DB>(rows: SelectQueryBuilder<DB, TB, object>) =>
        cap === undefined
          ? rows.select((sub) => sub.fn.countAll<string>().as('n'))
          : eb
              .selectFrom(
                rows
                  .select(sql<number>`1`.as('one'))
                  .limit(cap)
                  .as('capped'),
              )
              .select((sub) => sub.fn.countAll<string>().as('n'));
      return [
        's.id',
        eb
          .case()
          .when('s.type', '=', 'all')
          .then(countOf(eb.selectFrom('contacts')))
          .when('s.type', '=', 'static')
          .then(cap === undefined ? sql<string>`coalesce(s.member_count, 0)` : sql<string>`least(coalesce(s.member_count, 0), ${cap})`)
          .else(countOf(eb.selectFrom('contacts as c').whereRef('c.tags', '&&', 's.tags')))
          .end()
          .as('contact_count'),
      ];
    })
    .where('s.id', 'in', [...segmentIds]);
}

/**
 * Member counts of segments of one workspace, by segment id (ids of other workspaces are left
 * out): a `tag` segment counts the contacts carrying at least one of its tags (exact match,
 * any status), an `all` segment every contact of the workspace; with `cap`, each counts at
 * most `cap` members (the dashboard's pages, whose read must not grow with the segment).
 */
export async function countSegmentMembers(
  em: EntityManager,
  orgId: string,
  segmentIds: readonly string[],
  cap?: number,
): Promise<Map<string, number>> {
  if (segmentIds.length === 0) return new Map();
  const rows = await segmentCountQuery(workspaceDb(em, orgId), segmentIds, cap).execute();
  return new Map(rows.map((row) => [row.id, Number(row.contact_count)]));
}

/**
 * Counts the members of the dynamic segments among `segmentIds` now (exactly) and stores each
 * count with the time (member_count, counted_at); static segments are left alone (their stored
 * count is kept by the triggers). The segments' `updated_at` does not move: a count is no edit.
 */
export async function storeSegmentCounts(em: EntityManager, orgId: string, segmentIds: readonly string[]): Promise<void> {
  const db = workspaceDb(em, orgId);
  const rows = await segmentCountQuery(db, segmentIds)
    .where('s.type', '<>', 'static')
    .select(sql<Date>`now()`.as('counted_at'))
    .execute();
  for (const row of rows) {
    await db
      .updateTable('segments')
      .set({ member_count: Number(row.contact_count), counted_at: row.counted_at })
      .where('id', '=', row.id)
      .where('type', '<>', 'static')
      .execute();
  }
}

/** Contacts of the workspace carrying at least one of `tags` (all of them for no tags), up to `cap`: the GIN index on tags. */
export async function countContactsWithTags(em: EntityManager, orgId: string, tags: readonly string[], cap: number): Promise<number> {
  const db = workspaceDb(em, orgId);
  let rows = db.selectFrom('contacts').select(sql<number>`1`.as('one'));
  if (tags.length > 0) rows = rows.where((eb) => eb('tags', '&&', eb.val([...tags])));
  const row = await db
    .selectFrom(rows.limit(cap).as('capped'))
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

export const segmentNotFound = (id: string) => new AppError('not_found', `Segment ${id} does not exist.`);

/** A segment's membership rule, as contact lists filter on it; 404 for a segment of no one or of another workspace. */
export async function findSegmentRule(
  em: EntityManager,
  orgId: string,
  segmentId: string,
): Promise<{ id: string; type: string; tags: string[] }> {
  const row = await workspaceDb(em, orgId)
    .selectFrom('segments')
    .select(['id', 'type', 'tags'])
    .where('id', '=', segmentId.toLowerCase())
    .executeTakeFirst();
  if (!row) throw segmentNotFound(segmentId);
  return row;
}
