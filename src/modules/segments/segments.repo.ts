/**
 * Live member counts of a page of segments, in one statement whatever the page size (no
 * query per segment). A `tag` segment counts `contacts.tags && segment.tags` within the
 * workspace: a bitmap scan of the GIN index on contacts.tags, so its cost follows the
 * segment's own size. `all` segments share one count of the workspace's contacts (an
 * uncorrelated sub-select, run once and only when the page holds one, via the org_id index);
 * a `static` segment counts its rows of segment_members (primary key).
 *
 * Raw SQL is outside the tenant filter, so every clause names the workspace itself. Tags are
 * read from the segments table; the only parameters are ids (24-hex), which MikroORM inlines
 * as quoted literals.
 */
import type { EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';

const COUNT_MEMBERS_SQL = `
  select s.id,
    case when s.type = 'all' then (select count(*) from contacts where org_id = ?)
         when s.type = 'static' then (select count(*) from segment_members m where m.segment_id = s.id)
         else (select count(*) from contacts c where c.org_id = ? and c.tags && s.tags)
    end as contact_count
  from segments s
  where s.org_id = ? and s.id in (?)`;

/** The counting statement for some segments of a workspace (SQL with `?` placeholders, parameters). */
export function segmentCountStatement(orgId: string, segmentIds: readonly string[]) {
  return { sql: COUNT_MEMBERS_SQL, params: [orgId, orgId, orgId, [...segmentIds]] };
}

/**
 * Member counts of segments of one workspace, by segment id (ids of other workspaces are left
 * out): a `tag` segment counts the contacts carrying at least one of its tags (exact match,
 * any status), an `all` segment every contact of the workspace.
 */
export async function countSegmentMembers(
  em: EntityManager,
  orgId: string,
  segmentIds: readonly string[],
): Promise<Map<string, number>> {
  if (segmentIds.length === 0) return new Map();
  const { sql, params } = segmentCountStatement(orgId, segmentIds);
  const rows = await em.execute<{ id: string; contact_count: string | number }[]>(sql, params);
  return new Map(rows.map((row) => [row.id, Number(row.contact_count)]));
}

export const segmentNotFound = (id: string) => new AppError('not_found', `Segment ${id} does not exist.`);

/** A segment's membership rule, as contact lists filter on it; 404 for a segment of no one or of another workspace. */
export async function findSegmentRule(em: EntityManager, orgId: string, segmentId: string): Promise<{ id: string; type: string; tags: string[] }> {
  const [row] = await em.execute<{ id: string; type: string; tags: string[] }[]>('select id, type, tags from segments where org_id = ? and id = ?', [orgId, segmentId.toLowerCase()]);
  if (!row) throw segmentNotFound(segmentId);
  return row;
}
