import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral } from '../../../db/prepared.ts';
import { AppError } from '../../errors.ts';
import { segmentNotFound } from './segments.repo.ts';

/** The SQL of static-segment membership; every statement names the workspace. */

/** The segment locked for a membership change: 404 when absent, 409 SEGMENT_NOT_STATIC unless static. */
export async function lockStaticSegment(tx: EntityManager, orgId: string, id: string): Promise<void> {
  const [row] = await tx.execute<{ type: string }[]>('select type from segments where org_id = ? and id = ? for update', [orgId, id]);
  if (!row) throw segmentNotFound(id);
  if (row.type !== 'static') {
    throw new AppError('conflict', `Segment ${id} is a ${row.type} segment: its members follow from ${row.type === 'all' ? 'the workspace' : 'its tags'}. Only static segments have members added or removed.`, {
      reason: 'SEGMENT_NOT_STATIC',
    });
  }
}

/** The workspace's contacts with one of `ids` or `emails` (lower-cased). */
export async function findContactsByIdOrEmail(tx: EntityManager, orgId: string, ids: readonly string[], emails: readonly string[]): Promise<{ id: string; email: string }[]> {
  return tx.execute<{ id: string; email: string }[]>(
    'select id, email from contacts where org_id = ? and (id = any(?::text[]) or email = any(?::text[]))',
    [orgId, arrayLiteral(ids), arrayLiteral(emails)],
  );
}

export async function countMembers(tx: EntityManager, orgId: string, segmentId: string): Promise<number> {
  const [row] = await tx.execute<{ n: string | number }[]>('select count(*) as n from segment_members where org_id = ? and segment_id = ?', [orgId, segmentId]);
  return Number(row?.n ?? 0);
}

/** Adds the contacts to the segment; returns the ones that were not members yet. */
export async function insertMembers(tx: EntityManager, orgId: string, segmentId: string, contactIds: readonly string[]): Promise<string[]> {
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
  const rows = await tx.execute<{ contact_id: string }[]>(
    'delete from segment_members where org_id = ? and segment_id = ? and contact_id = any(?::text[]) returning contact_id',
    [orgId, segmentId, arrayLiteral(contactIds)],
  );
  return rows.map((r) => r.contact_id);
}

/** Marks the segment changed now. */
export async function touchSegment(tx: EntityManager, orgId: string, segmentId: string): Promise<void> {
  await tx.execute('update segments set updated_at = now() where org_id = ? and id = ?', [orgId, segmentId]);
}
