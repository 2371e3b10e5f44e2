import type { EntityManager } from '@mikro-orm/postgresql';
import { arrayLiteral } from '../../../db/prepared.ts';

/** The SQL of thread and message state (read, starred, archived, tags); every statement names the workspace. */

/** The row's state, locked for the change; null when the workspace has no such row. */
export async function lockRow<T>(tx: EntityManager, table: 'inbox_threads' | 'inbox_messages', columns: string, orgId: string, id: string): Promise<T | null> {
  const [row] = await tx.execute<T[]>(`select ${columns} from ${table} where org_id = ? and id = ? for update`, [orgId, id]);
  return row ?? null;
}

export async function writeMessageState(tx: EntityManager, orgId: string, id: string, state: { read: boolean; starred: boolean; tags: readonly string[] }): Promise<void> {
  await tx.execute(
    `update inbox_messages set read_at = case when ? then coalesce(read_at, now()) end, starred = ?, tags = ?::text[], updated_at = now()
      where org_id = ? and id = ?`,
    [state.read, state.starred, arrayLiteral(state.tags), orgId, id],
  );
}

/** Marks every unread message of the thread read; returns how many changed. */
export async function markThreadRead(tx: EntityManager, orgId: string, threadId: string): Promise<number> {
  const rows = await tx.execute<{ id: string }[]>(
    `update inbox_messages set read_at = now(), updated_at = now() where org_id = ? and thread_id = ? and read_at is null returning id`,
    [orgId, threadId],
  );
  return rows.length;
}

/** Marks the thread's latest message (received first, else sent) unread; returns how many changed (0 or 1). */
export async function markLatestUnread(tx: EntityManager, orgId: string, threadId: string): Promise<number> {
  const rows = await tx.execute<{ id: string }[]>(
    `update inbox_messages set read_at = null, updated_at = now()
      where id = (select id from inbox_messages where org_id = ? and thread_id = ?
                   order by direction = 'inbound' desc, created_at desc, id desc limit 1)
        and read_at is not null returning id`,
    [orgId, threadId],
  );
  return rows.length;
}

export async function writeThreadState(tx: EntityManager, orgId: string, id: string, state: { starred: boolean; archived: boolean; tags: readonly string[] }): Promise<void> {
  await tx.execute(`update inbox_threads set starred = ?, archived = ?, tags = ?::text[], updated_at = now() where org_id = ? and id = ?`, [
    state.starred,
    state.archived,
    arrayLiteral(state.tags),
    orgId,
    id,
  ]);
}
