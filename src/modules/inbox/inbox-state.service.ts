/**
 * Thread and message state (scope inbox.threads:write): read, starred, archived, tags. Each
 * change locks its row, moves `updated_at` only when something changed (so GET /inbox/messages
 * pollers see exactly the messages whose state changed), and answers the new state.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import type { InboxThread } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { nextTags, type TagChange } from './inbox.fns.ts';
import type { ThreadSummaries } from './inbox.repo.ts';
import { lockRow, markLatestUnread, markThreadRead, writeMessageState, writeThreadState } from './inbox-state.repo.ts';
import { INBOX_LIMITS, type UpdateMessageInput, type UpdateThreadInput } from './inbox.schemas.ts';
import { messageNotFound, threadNotFound, type InboxService, type MessageDetail } from './inbox.service.ts';

export interface ThreadView {
  thread: InboxThread;
  summary: ThreadSummaries;
}

function tagsAfter(current: readonly string[], change: TagChange): string[] {
  const next = nextTags(current, change, INBOX_LIMITS.tagsMax);
  if (next.ok) return next.tags;
  throw new AppError('invalid_request', `Invalid body.${next.path}: ${next.message}.`, {
    fields: [{ path: next.path, location: 'body', type: 'tags', message: next.message }],
  });
}

const sameTags = (a: readonly string[], b: readonly string[]) => a.length === b.length && a.every((tag, i) => tag === b[i]);

export function createInboxStateService({ orm, inbox }: { orm: MikroORM; inbox: Pick<InboxService, 'getMessage' | 'getThread'> }) {
  return {
    /** Marks a message read or unread, stars it, changes its tags; 404 when absent. */
    async updateMessage(orgId: string, messageId: string, input: UpdateMessageInput): Promise<MessageDetail> {
      const id = messageId.toLowerCase();
      await orm.em.fork().transactional(async (tx) => {
        const row = await lockRow<{ read_at: string | null; starred: boolean; tags: string[] }>(
          tx,
          'inbox_messages',
          'read_at, starred, tags',
          orgId,
          id,
        );
        if (!row) throw messageNotFound(messageId);
        const tags = tagsAfter(row.tags, input);
        const read = input.read ?? row.read_at !== null;
        const starred = input.starred ?? row.starred;
        if (read === (row.read_at !== null) && starred === row.starred && sameTags(tags, row.tags)) return;
        await writeMessageState(tx, orgId, id, { read, starred, tags });
      });
      return inbox.getMessage(orgId, id);
    },

    /**
     * Stars, archives or tags a thread; `read: true` marks every message of it read, `read:
     * false` its latest message (received, else sent) unread. 404 when absent.
     */
    async updateThread(orgId: string, threadId: string, input: UpdateThreadInput): Promise<ThreadView> {
      const id = threadId.toLowerCase();
      await orm.em.fork().transactional(async (tx) => {
        const row = await lockRow<{ starred: boolean; archived: boolean; tags: string[] }>(
          tx,
          'inbox_threads',
          'starred, archived, tags',
          orgId,
          id,
        );
        if (!row) throw threadNotFound(threadId);
        const tags = tagsAfter(row.tags, input);
        let messagesChanged = 0;
        if (input.read === true) {
          messagesChanged = await markThreadRead(tx, orgId, id);
        } else if (input.read === false) {
          messagesChanged = await markLatestUnread(tx, orgId, id);
        }
        const starred = input.starred ?? row.starred;
        const archived = input.archived ?? row.archived;
        if (messagesChanged === 0 && starred === row.starred && archived === row.archived && sameTags(tags, row.tags)) return;
        await writeThreadState(tx, orgId, id, { starred, archived, tags });
      });
      return inbox.getThread(orgId, id);
    },
  };
}

export type InboxStateService = ReturnType<typeof createInboxStateService>;
