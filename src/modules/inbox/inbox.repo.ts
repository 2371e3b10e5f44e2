/**
 * The inbox read queries that need PostgreSQL's full timestamp precision. Keyset pages compare
 * `(updated_at, id)` / `(last_message_at, id)` in SQL against the cursor's microsecond text
 * (a JS Date holds only milliseconds: rows within one millisecond would be skipped or repeated)
 * and read each row's sort value back as text for the next cursor. Queries go through
 * `workspaceDb`, which adds `org_id = <workspace>` for every workspace table they name
 * (subqueries and joins included); parameters are ids, picklist values and timestamps.
 */
import { type Expression, type SqlBool, sql } from 'kysely';
import { InboxAttachment, InboxMessage, InboxThread, type MessageDirection } from '../../../db/entities/index.ts';
import type { EntityManager } from '../../../db/orm.ts';
import { workspaceDb } from '../../../db/workspace-db.ts';

/** A row and its sort value at full precision (`2026-11-21T08:00:00.123456Z`). */
export interface Sorted<T> {
  row: T;
  sortKey: string;
}

export interface PreciseKeysetPage<T> {
  items: Sorted<T>[];
  hasMore: boolean;
}

/** Where the next page starts: the last row's precise sort value and id. */
export interface PreciseAfter {
  sortKey: string;
  id: string;
}

/** A timestamp column as UTC text at full precision (`2026-11-21T08:00:00.123456Z`), selected as `sort_key`. */
const sortKeyOf = (column: 'm.updated_at' | 't.last_message_at') =>
  sql<string>`to_char(${sql.ref(column)} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`.as('sort_key');

/** A cursor's precise sort value, compared as a timestamp. */
const preciseTimestamp = (sortKey: string) => sql<string>`${sortKey}::timestamptz`;

/** Whose conversations `scope=mine` keeps (see ListMessagesQuery). */
export interface MineFilter {
  /** The actor user's address, lower-cased; null when the key's user has none. */
  email: string | null;
  keyId: string | null;
}

export interface MessageFilter {
  threadId?: string | undefined;
  direction?: MessageDirection | undefined;
  /** Inclusive lower bound on updated_at. */
  updatedAfter?: Date | undefined;
  mine?: MineFilter | undefined;
}

function mapRows<T extends object>(em: EntityManager, entity: new () => T, rows: Record<string, unknown>[]): Sorted<T>[] {
  return rows.map((raw) => {
    const { sort_key: sortKey, ...columns } = raw;
    return { row: em.map<T>(entity as never, columns as never), sortKey: String(sortKey) };
  });
}

/**
 * One page of a workspace's messages in (updated_at, id) ascending order, after `after`.
 * A message changed after it was read gets a later updated_at and so comes again further on.
 */
export async function findMessagePage(
  em: EntityManager,
  orgId: string,
  filter: MessageFilter,
  page: { limit: number; after?: PreciseAfter | undefined },
): Promise<PreciseKeysetPage<InboxMessage>> {
  let query = workspaceDb(em, orgId)
    .selectFrom('inbox_messages as m')
    .selectAll('m')
    .select(sortKeyOf('m.updated_at'))
    .orderBy('m.updated_at', 'asc')
    .orderBy('m.id', 'asc')
    .limit(page.limit + 1);
  if (filter.threadId !== undefined) query = query.where('m.thread_id', '=', filter.threadId);
  if (filter.direction !== undefined) query = query.where('m.direction', '=', filter.direction);
  if (filter.updatedAfter !== undefined) query = query.where('m.updated_at', '>=', filter.updatedAfter.toISOString());
  const { after } = page;
  if (after !== undefined) {
    query = query.where((eb) => eb(eb.refTuple('m.updated_at', 'm.id'), '>', eb.tuple(preciseTimestamp(after.sortKey), after.id)));
  }
  if (filter.mine !== undefined) {
    const { email, keyId } = filter.mine;
    query = query.where((eb) => {
      const threads: Expression<SqlBool>[] = [];
      if (email !== null) {
        // Threads the user takes part in.
        threads.push(
          eb(
            'm.thread_id',
            'in',
            eb
              .selectFrom('inbox_threads as t')
              .select('t.id')
              .where((t) => t(t.val(email), '=', t.fn.any('t.participants'))),
          ),
        );
      }
      if (keyId !== null) {
        // Threads of an email the key sent (the workspace applies to both tables: s in WHERE, e in the join's ON).
        const sent = eb
          .selectFrom('inbox_messages as s')
          .innerJoin('transactional_emails as e', 'e.id', 's.email_id')
          .select('s.thread_id')
          .where('e.api_key_id', '=', keyId);
        threads.push(eb('m.thread_id', 'in', sent));
      }
      return threads.length > 0 ? eb.or(threads) : eb.lit(false);
    });
  }
  const rows = await query.execute();
  const items = mapRows(em, InboxMessage, rows);
  return { items: items.slice(0, page.limit), hasMore: items.length > page.limit };
}

/** Thread list filters (each optional). */
export interface ThreadFilter {
  archived?: boolean | undefined;
  starred?: boolean | undefined;
  unread?: boolean | undefined;
  tag?: string | undefined;
}

/** One page of a workspace's threads, most recent conversation first: (last_message_at, id) descending. */
export async function findThreadPage(
  em: EntityManager,
  orgId: string,
  filter: ThreadFilter,
  page: { limit: number; after?: PreciseAfter | undefined },
): Promise<PreciseKeysetPage<InboxThread>> {
  let query = workspaceDb(em, orgId)
    .selectFrom('inbox_threads as t')
    .selectAll('t')
    .select(sortKeyOf('t.last_message_at'))
    .orderBy('t.last_message_at', 'desc')
    .orderBy('t.id', 'desc')
    .limit(page.limit + 1);
  if (filter.archived !== undefined) query = query.where('t.archived', '=', filter.archived);
  if (filter.starred !== undefined) query = query.where('t.starred', '=', filter.starred);
  const { tag, unread } = filter;
  if (tag !== undefined) query = query.where((eb) => eb(eb.val(tag), '=', eb.fn.any('t.tags')));
  if (unread !== undefined) {
    query = query.where((eb) => {
      const unreadMessage = eb.exists(
        eb
          .selectFrom('inbox_messages as m')
          .select(eb.lit(1).as('one'))
          .whereRef('m.thread_id', '=', 't.id')
          .where('m.read_at', 'is', null),
      );
      return unread ? unreadMessage : eb.not(unreadMessage);
    });
  }
  const { after } = page;
  if (after !== undefined) {
    query = query.where((eb) => eb(eb.refTuple('t.last_message_at', 't.id'), '<', eb.tuple(preciseTimestamp(after.sortKey), after.id)));
  }
  const rows = await query.execute();
  const items = mapRows(em, InboxThread, rows);
  return { items: items.slice(0, page.limit), hasMore: items.length > page.limit };
}

/** What a thread list shows of a thread's latest message. */
export interface LastMessage {
  id: string;
  threadId: string;
  direction: MessageDirection;
  kind: InboxMessage['kind'];
  fromEmail: string;
  fromName: string;
  /** The start of the text body (the caller shortens it). */
  textStart: string;
  createdAt: Date;
}

const TEXT_START_CHARS = 1000;

/** What a thread list shows of each thread's messages. */
export interface ThreadSummaries {
  lastMessages: Map<string, LastMessage>;
  /** Threads that still have a message whose attachments are not settled. */
  pendingThreadIds: Set<string>;
  /** Messages not marked read, by thread (absent: none). */
  unreadCounts: Map<string, number>;
}

/**
 * The latest message (by created_at, id) of each of some threads, the threads that still
 * have a message whose attachments are not settled, and unread counts: two statements for a
 * whole page.
 */
export async function findThreadSummaries(em: EntityManager, orgId: string, threadIds: readonly string[]): Promise<ThreadSummaries> {
  const lastMessages = new Map<string, LastMessage>();
  if (threadIds.length === 0) return { lastMessages, pendingThreadIds: new Set(), unreadCounts: new Map() };
  const db = workspaceDb(em, orgId);
  const latest = await db
    .selectFrom('inbox_messages as m')
    .select((eb) => [
      'm.id',
      'm.thread_id',
      'm.direction',
      'm.kind',
      'm.from_email',
      'm.from_name',
      eb.fn<string>('left', ['m.text', eb.val(TEXT_START_CHARS)]).as('text_start'),
      'm.created_at',
    ])
    .where('m.id', 'in', (eb) =>
      eb
        .selectFrom('inbox_messages as l')
        .distinctOn('l.thread_id')
        .select('l.id')
        .where('l.thread_id', 'in', [...threadIds])
        .orderBy('l.thread_id')
        .orderBy('l.created_at', 'desc')
        .orderBy('l.id', 'desc'),
    )
    .execute();
  for (const row of latest) {
    lastMessages.set(row.thread_id, {
      id: row.id,
      threadId: row.thread_id,
      direction: row.direction,
      kind: row.kind,
      fromEmail: row.from_email,
      fromName: row.from_name,
      textStart: row.text_start,
      // The driver hands timestamps over as text (MikroORM's type parsers).
      createdAt: new Date(row.created_at),
    });
  }
  const states = await db
    .selectFrom('inbox_messages as m')
    .select((eb) => [
      'm.thread_id',
      eb.fn<boolean>('bool_or', [eb.not('m.attachments_ready')]).as('pending'),
      eb.fn.countAll<string | number>().filterWhere('m.read_at', 'is', null).as('unread'),
    ])
    .where('m.thread_id', 'in', [...threadIds])
    .groupBy('m.thread_id')
    .execute();
  return {
    lastMessages,
    pendingThreadIds: new Set(states.filter((row) => row.pending).map((row) => row.thread_id)),
    unreadCounts: new Map(states.map((row) => [row.thread_id, Number(row.unread)])),
  };
}

/** The stored attachments of some messages, in MIME order, by message id. `em` must be workspace-scoped. */
export async function findStoredAttachments(em: EntityManager, messageIds: readonly string[]): Promise<Map<string, InboxAttachment[]>> {
  const byMessage = new Map<string, InboxAttachment[]>();
  if (messageIds.length === 0) return byMessage;
  const attachments = await em.find(
    InboxAttachment,
    { messageId: { $in: [...messageIds] }, status: 'stored' },
    { orderBy: { messageId: 'asc', position: 'asc' } },
  );
  for (const attachment of attachments) {
    byMessage.set(attachment.messageId, [...(byMessage.get(attachment.messageId) ?? []), attachment]);
  }
  return byMessage;
}
