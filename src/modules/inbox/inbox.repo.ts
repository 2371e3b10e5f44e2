/**
 * The inbox read queries that need PostgreSQL's full timestamp precision. Keyset pages compare
 * `(updated_at, id)` / `(last_message_at, id)` in SQL against the cursor's microsecond text
 * (a JS Date holds only milliseconds: rows within one millisecond would be skipped or repeated)
 * and read each row's sort value back as text for the next cursor. Raw SQL is outside the
 * tenant filter, so every clause names the workspace itself; parameters are ids, picklist
 * values and timestamps.
 */
import { InboxAttachment, InboxMessage, InboxThread, type MessageDirection } from '../../../db/entities/index.ts';
import type { EntityManager } from '../../../db/orm.ts';

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

const sortKeyOf = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') as sort_key`;

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
  const clauses = ['m.org_id = ?'];
  const params: unknown[] = [orgId];
  if (filter.threadId !== undefined) {
    clauses.push('m.thread_id = ?');
    params.push(filter.threadId);
  }
  if (filter.direction !== undefined) {
    clauses.push('m.direction = ?');
    params.push(filter.direction);
  }
  if (filter.updatedAfter !== undefined) {
    clauses.push('m.updated_at >= ?::timestamptz');
    params.push(filter.updatedAfter.toISOString());
  }
  if (page.after !== undefined) {
    clauses.push('(m.updated_at, m.id) > (?::timestamptz, ?)');
    params.push(page.after.sortKey, page.after.id);
  }
  if (filter.mine !== undefined) {
    const mine: string[] = [];
    if (filter.mine.email !== null) {
      mine.push('m.thread_id in (select t.id from inbox_threads t where t.org_id = ? and ? = any(t.participants))');
      params.push(orgId, filter.mine.email);
    }
    if (filter.mine.keyId !== null) {
      mine.push(
        'm.thread_id in (select s.thread_id from inbox_messages s join transactional_emails e on e.id = s.email_id where s.org_id = ? and e.org_id = ? and e.api_key_id = ?)',
      );
      params.push(orgId, orgId, filter.mine.keyId);
    }
    clauses.push(mine.length > 0 ? `(${mine.join(' or ')})` : 'false');
  }
  params.push(page.limit + 1);
  const rows = await em.execute<Record<string, unknown>[]>(
    `/* workspace: the first clause is the workspace of the messages */
     select m.*, ${sortKeyOf('m.updated_at')} from inbox_messages m
     where ${clauses.join(' and ')}
     order by m.updated_at asc, m.id asc
     limit ?`,
    params,
  );
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
  const params: unknown[] = [orgId];
  const where: string[] = [];
  const bound = (clause: string, value: unknown) => {
    where.push(clause);
    params.push(value);
  };
  if (filter.archived !== undefined) bound('and t.archived = ?', filter.archived);
  if (filter.starred !== undefined) bound('and t.starred = ?', filter.starred);
  if (filter.tag !== undefined) bound('and ? = any(t.tags)', filter.tag);
  if (filter.unread !== undefined) {
    where.push(`and ${filter.unread ? '' : 'not '}exists (/* workspace: the messages of a thread t of the workspace */ select 1 from inbox_messages m where m.thread_id = t.id and m.read_at is null)`);
  }
  let after = '';
  if (page.after !== undefined) {
    after = 'and (t.last_message_at, t.id) < (?::timestamptz, ?)';
    params.push(page.after.sortKey, page.after.id);
  }
  params.push(page.limit + 1);
  const rows = await em.execute<Record<string, unknown>[]>(
    `select t.*, ${sortKeyOf('t.last_message_at')} from inbox_threads t
     where t.org_id = ? ${where.join(' ')} ${after}
     order by t.last_message_at desc, t.id desc
     limit ?`,
    params,
  );
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
export async function findThreadSummaries(
  em: EntityManager,
  orgId: string,
  threadIds: readonly string[],
): Promise<ThreadSummaries> {
  const lastMessages = new Map<string, LastMessage>();
  if (threadIds.length === 0) return { lastMessages, pendingThreadIds: new Set(), unreadCounts: new Map() };
  const latest = await em.execute<Record<string, unknown>[]>(
    `select m.id, m.thread_id, m.direction, m.kind, m.from_email, m.from_name, left(m.text, ?) as text_start, m.created_at
     from inbox_messages m
     where m.org_id = ? and m.id in (
       select distinct on (l.thread_id) l.id from inbox_messages l
       where l.org_id = ? and l.thread_id in (?)
       order by l.thread_id, l.created_at desc, l.id desc
     )`,
    [TEXT_START_CHARS, orgId, orgId, [...threadIds]],
  );
  for (const row of latest) {
    lastMessages.set(String(row.thread_id), {
      id: String(row.id),
      threadId: String(row.thread_id),
      direction: row.direction as MessageDirection,
      kind: row.kind as InboxMessage['kind'],
      fromEmail: String(row.from_email),
      fromName: String(row.from_name),
      textStart: String(row.text_start),
      createdAt: new Date(row.created_at as string | Date),
    });
  }
  const states = await em.execute<{ thread_id: string; pending: boolean; unread: string | number }[]>(
    `select m.thread_id, bool_or(not m.attachments_ready) as pending, count(*) filter (where m.read_at is null) as unread
       from inbox_messages m where m.org_id = ? and m.thread_id in (?) group by m.thread_id`,
    [orgId, [...threadIds]],
  );
  return {
    lastMessages,
    pendingThreadIds: new Set(states.filter((row) => row.pending).map((row) => row.thread_id)),
    unreadCounts: new Map(states.map((row) => [row.thread_id, Number(row.unread)])),
  };
}

/** The stored attachments of some messages, in MIME order, by message id. `em` must be workspace-scoped. */
export async function findStoredAttachments(
  em: EntityManager,
  messageIds: readonly string[],
): Promise<Map<string, InboxAttachment[]>> {
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
