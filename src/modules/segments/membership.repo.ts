import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import { arrayLiteral } from '../../../db/prepared.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';
import { AppError } from '../../errors.ts';
import { segmentNotFound } from './segments.repo.ts';

/**
 * The SQL of static-segment membership: Kysely queries through `workspaceDb` (which adds the
 * workspace to every table they name), in the caller's transaction; the insert, an insert …
 * select, is SQL text that names the workspace itself.
 */

/** `values` as one `text[]` parameter, for `column = any(…)`. */
const textArray = (values: readonly string[]) => sql<string[]>`${[...values]}::text[]`;

/** The segment locked for a membership change: 404 when absent, 409 SEGMENT_NOT_STATIC unless static. */
export async function lockStaticSegment(tx: EntityManager, orgId: string, id: string): Promise<void> {
  const row = await workspaceDb(tx, orgId).selectFrom('segments').select('type').where('id', '=', id).forUpdate().executeTakeFirst();
  if (!row) throw segmentNotFound(id);
  if (row.type !== 'static') {
    throw new AppError(
      'conflict',
      `Segment ${id} is a ${row.type} segment: its members follow from ${row.type === 'all' ? 'the workspace' : 'its tags'}. Only static segments have members added or removed.`,
      {
        reason: 'SEGMENT_NOT_STATIC',
      },
    );
  }
}

/** The workspace's contacts with one of `ids` or `emails` (lower-cased). */
export async function findContactsByIdOrEmail(
  tx: EntityManager,
  orgId: string,
  ids: readonly string[],
  emails: readonly string[],
): Promise<{ id: string; email: string }[]> {
  return workspaceDb(tx, orgId)
    .selectFrom('contacts')
    .select(['id', 'email'])
    .where((eb) => eb.or([eb('id', '=', eb.fn.any(textArray(ids))), eb('email', '=', eb.fn.any(textArray(emails)))]))
    .execute();
}

export async function countMembers(tx: EntityManager, orgId: string, segmentId: string): Promise<number> {
  const row = await workspaceDb(tx, orgId)
    .selectFrom('segment_members')
    .select((eb) => eb.fn.countAll<string>().as('n'))
    .where('segment_id', '=', segmentId)
    .executeTakeFirst();
  return Number(row?.n ?? 0);
}

/** Adds the contacts to the segment; returns the ones that were not members yet. */
export async function insertMembers(tx: EntityManager, orgId: string, segmentId: string, contactIds: readonly string[]): Promise<string[]> {
  // An insert … select (workspaceDb takes an insert only with the workspace in each VALUES row): SQL text that sets org_id itself.
  const rows = await tx.execute<{ contact_id: string }[]>(
    `insert into segment_members (segment_id, contact_id, org_id, created_at)
     select ?, c, ?, now() from unnest(?::text[]) as c
     on conflict do nothing returning contact_id`,
    [segmentId, orgId, arrayLiteral(contactIds)],
  );
  return rows.map((r) => r.contact_id);
}

/** Removes the contacts from the segment; returns the ones that were members. */
export async function deleteMembers(tx: EntityManager, orgId: string, segmentId: string, contactIds: readonly string[]): Promise<string[]> {
  const rows = await workspaceDb(tx, orgId)
    .deleteFrom('segment_members')
    .where('segment_id', '=', segmentId)
    .where((eb) => eb('contact_id', '=', eb.fn.any(textArray(contactIds))))
    .returning('contact_id')
    .execute();
  return rows.map((r) => r.contact_id);
}

/** Marks the segment changed now. */
export async function touchSegment(tx: EntityManager, orgId: string, segmentId: string): Promise<void> {
  await workspaceDb(tx, orgId)
    .updateTable('segments')
    .set({ updated_at: sql<Date>`now()` })
    .where('id', '=', segmentId)
    .execute();
}
