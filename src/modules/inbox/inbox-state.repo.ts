import type { EntityManager } from '@mikro-orm/postgresql';
import { sql } from 'kysely';
import { workspaceDb } from '../../../db/workspace-db.ts';

/**
 * The statements of thread and message state (read, starred, archived, tags), in the caller's
 * transaction; `workspaceDb` confines each to the workspace (`org_id = <workspace>` on every
 * table it names).
 */

/**
 * The row's state, locked for the change; null when the workspace has no such row. `columns`
 * is a comma-separated list of column names (constants of the caller, not input).
 */
export async function lockRow<T>(
  tx: EntityManager,
  table: 'inbox_threads' | 'inbox_messages',
  columns: string,
  orgId: string,
  id: string,
): Promise<T | null> {
  const db = workspaceDb(tx, orgId);
  const row = await db
    .selectFrom(table)
    .select(columns.split(',').map((column) => db.dynamic.ref(column.trim())))
    .where('id', '=', id)
    .forUpdate()
    .executeTakeFirst();
  return (row as T | undefined) ?? null;
}

export async function writeMessageState(
  tx: EntityManager,
  orgId: string,
  id: string,
  state: { read: boolean; starred: boolean; tags: readonly string[] },
): Promise<void> {
  await workspaceDb(tx, orgId)
    .updateTable('inbox_messages')
    .set((eb) => ({
      // Marking read keeps the first read time.
      read_at: state.read ? eb.fn.coalesce('read_at', sql<Date>`now()`) : null,
      starred: state.starred,
      tags: [...state.tags],
      updated_at: sql<Date>`now()`,
    }))
    .where('id', '=', id)
    .execute();
}

/** Marks every unread message of the thread read; returns how many changed. */
export async function markThreadRead(tx: EntityManager, orgId: string, threadId: string): Promise<number> {
  const rows = await workspaceDb(tx, orgId)
    .updateTable('inbox_messages')
    .set({ read_at: sql<Date>`now()`, updated_at: sql<Date>`now()` })
    .where('thread_id', '=', threadId)
    .where('read_at', 'is', null)
    .returning('id')
    .execute();
  return rows.length;
}

/** Marks the thread's latest message (received first, else sent) unread; returns how many changed (0 or 1). */
export async function markLatestUnread(tx: EntityManager, orgId: string, threadId: string): Promise<number> {
  const rows = await workspaceDb(tx, orgId)
    .updateTable('inbox_messages')
    .set({ read_at: null, updated_at: sql<Date>`now()` })
    .where('id', '=', (eb) =>
      eb
        .selectFrom('inbox_messages as l')
        .select('l.id')
        .where('l.thread_id', '=', threadId)
        .orderBy((l) => l('l.direction', '=', 'inbound'), 'desc')
        .orderBy('l.created_at', 'desc')
        .orderBy('l.id', 'desc')
        .limit(1),
    )
    .where('read_at', 'is not', null)
    .returning('id')
    .execute();
  return rows.length;
}

export async function writeThreadState(
  tx: EntityManager,
  orgId: string,
  id: string,
  state: { starred: boolean; archived: boolean; tags: readonly string[] },
): Promise<void> {
  await workspaceDb(tx, orgId)
    .updateTable('inbox_threads')
    .set({ starred: state.starred, archived: state.archived, tags: [...state.tags], updated_at: sql<Date>`now()` })
    .where('id', '=', id)
    .execute();
}
