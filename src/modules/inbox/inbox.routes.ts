import type { InboxMessage, InboxThread } from '../../../db/entities/index.ts';
import type { CursorCodec } from '../../http/cursor.ts';
import { filteredList, listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import { IdParams } from '../../http/schemas.ts';
import { contentDisposition, reprDigest } from './inbox.fns.ts';
import type { Sorted } from './inbox.repo.ts';
import {
  AttachmentParams,
  InboxMessageDetailResponse,
  InboxMessageResponse,
  InboxThreadResponse,
  ListMessagesQuery,
  ListThreadsQuery,
  INBOX_LIMITS,
  UpdateMessageBody,
  UpdateThreadBody,
} from './inbox.schemas.ts';
import type { InboxStateService } from './inbox-state.service.ts';
import { serializeInboxMessage, serializeInboxMessageDetail, serializeThread } from './inbox.serializer.ts';
import type { InboxService } from './inbox.service.ts';

const THREADS_LIST = 'inbox-threads';
const MESSAGES_LIST = 'inbox-messages';

/**
 * GET /inbox/threads, /inbox/messages, /inbox/messages/{id}, /inbox/messages/{id}/attachments/{attachmentId}
 * (scope inbox.threads:read), and PATCH /inbox/threads/{id}, /inbox/messages/{id} for their state (inbox.threads:write). The message list is ordered by (updated_at, id)
 * ascending with a cursor at microsecond precision that every non-empty page returns, so a
 * poller resumes from its last cursor and sees every later change (docs/inbox.md). Attachment
 * bytes are streamed as application/octet-stream, never rendered inline.
 */
export function createInboxRoutes(deps: { inbox: InboxService; state: InboxStateService; cursors: CursorCodec }) {
  return [
    defineRoute({
      operationId: 'getInboxThread',
      method: 'GET',
      path: '/inbox/threads/:id',
      summary: 'Retrieve a thread',
      description: 'The thread as GET /inbox/threads lists it; its messages are GET /inbox/messages?thread_id=….',
      tag: 'Inbox',
      scope: 'inbox.threads:read',
      extension: true,
      params: IdParams,
      response: { status: 200, description: 'The thread', schema: InboxThreadResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        const view = await deps.inbox.getThread(caller.orgId, params.id);
        return { status: 200, data: serializeThread(view.thread, view.summary) };
      },
    }),
    defineRoute({
      operationId: 'updateInboxThread',
      method: 'PATCH',
      path: '/inbox/threads/:id',
      summary: 'Mark a thread read or unread, star, archive or tag it',
      description: [
        '`read: true` marks every message of the thread read; `read: false` marks its latest received message (else its latest message) unread. ' +
          '`archived` hides nothing by itself: list with `archived=false` for an inbox view; a message received on an archived thread brings it back.',
        `\`tags\` replaces the thread's tags; \`add_tags\` and \`remove_tags\` change them without reading them first (not together with \`tags\`). ` +
          `Each tag is 1 to ${INBOX_LIMITS.tagMax} letters, digits or _ - . :, at most ${INBOX_LIMITS.tagsMax} per thread.`,
        'updated_at moves when something changed, on the thread and on every message whose read state changed (GET /inbox/messages pollers see them). An empty body changes nothing.',
      ].join('\n\n'),
      tag: 'Inbox',
      scope: 'inbox.threads:write',
      extension: true,
      params: IdParams,
      body: UpdateThreadBody,
      response: { status: 200, description: 'The thread', schema: InboxThreadResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params, body }) {
        const view = await deps.state.updateThread(caller.orgId, params.id, body);
        return { status: 200, data: serializeThread(view.thread, view.summary) };
      },
    }),
    defineRoute({
      operationId: 'updateInboxMessage',
      method: 'PATCH',
      path: '/inbox/messages/:id',
      summary: 'Mark a message read or unread, star or tag it',
      description:
        `\`tags\` replaces the message's tags; \`add_tags\` and \`remove_tags\` change them (not together with \`tags\`); at most ${INBOX_LIMITS.tagsMax}. ` +
        'updated_at moves when something changed, so GET /inbox/messages pollers see the change. An empty body changes nothing.',
      tag: 'Inbox',
      scope: 'inbox.threads:write',
      extension: true,
      params: IdParams,
      body: UpdateMessageBody,
      response: { status: 200, description: 'The message', schema: InboxMessageDetailResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params, body }) {
        return { status: 200, data: serializeInboxMessageDetail(await deps.state.updateMessage(caller.orgId, params.id, body)) };
      },
    }),
    defineRoute({
      operationId: 'listInboxThreads',
      method: 'GET',
      path: '/inbox/threads',
      summary: 'List conversation threads, most recent first',
      description:
        'Ordered by last_message_at descending, then id. A thread that receives a message moves to the front; ' +
        'to follow changes, poll GET /inbox/messages. Herald extension: filters archived, starred, unread (true or false) and tag; ' +
        'a cursor belongs to its filters.',
      tag: 'Inbox',
      scope: 'inbox.threads:read',
      query: ListThreadsQuery,
      response: { status: 200, description: 'A page of threads', schema: InboxThreadResponse, list: true },
      handle: ({ caller, query }) => {
        const { list, filters } = filteredList(THREADS_LIST, query);
        return listResult(
          {
            cursors: deps.cursors,
            list,
            caller,
            query,
            position: (item: Sorted<InboxThread>) => ({ sortValue: item.row.lastMessageAt, id: item.row.id, sortText: item.sortKey }),
          },
          (page) => deps.inbox.listThreads(caller.orgId, filters, page),
          (item, page) => serializeThread(item.row, page),
        );
      },
    }),
    defineRoute({
      operationId: 'listInboxMessages',
      method: 'GET',
      path: '/inbox/messages',
      summary: 'List inbound and outbound messages in updated_at order',
      description:
        'Ordered by updated_at ascending, then id. Every non-empty page carries a next_cursor (also the last page): ' +
        'keep the last one and poll with it to get only what changed since; a message that changes again comes ' +
        'again. To reconcile, also list with updated_after a few minutes before the newest updated_at seen ' +
        '(inclusive). Re-fetch a message while attachments_ready is false.',
      tag: 'Inbox',
      scope: 'inbox.threads:read',
      query: ListMessagesQuery,
      response: { status: 200, description: 'A page of inbox messages', schema: InboxMessageResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          {
            cursors: deps.cursors,
            list: MESSAGES_LIST,
            caller,
            query,
            resumable: true,
            position: (item: Sorted<InboxMessage>) => ({ sortValue: item.row.updatedAt, id: item.row.id, sortText: item.sortKey }),
          },
          (page) => deps.inbox.listMessages(caller, query, page),
          (item, page) => serializeInboxMessage(item.row, page.attachments.get(item.row.id) ?? []),
        ),
    }),
    defineRoute({
      operationId: 'getInboxMessage',
      method: 'GET',
      path: '/inbox/messages/:id',
      summary: 'Retrieve an inbox message with reply correlation',
      description:
        'Adds to the listed fields the HTML body, `in_reply_to` (the workspace message this one answers) and ' +
        '`replies` (messages answering it).',
      tag: 'Inbox',
      scope: 'inbox.threads:read',
      params: IdParams,
      response: { status: 200, description: 'The message', schema: InboxMessageDetailResponse },
      errors: ['invalid_request', 'not_found'],
      async handle({ caller, params }) {
        return { status: 200, data: serializeInboxMessageDetail(await deps.inbox.getMessage(caller.orgId, params.id)) };
      },
    }),
    defineRoute({
      operationId: 'downloadInboxAttachment',
      method: 'GET',
      path: '/inbox/messages/:id/attachments/:attachmentId',
      summary: 'Download the bytes of a message attachment',
      description:
        'The exact stored bytes, always as application/octet-stream with `Content-Disposition: attachment` (the ' +
        "declared type is the attachment's content_type on the message). These are private bytes from an outside " +
        "sender: scan them before opening or extracting. 404 when the attachment is not one of this message's " +
        'stored attachments (failed ingestion included).',
      tag: 'Inbox',
      scope: 'inbox.threads:read',
      params: AttachmentParams,
      response: {
        status: 200,
        description: 'The attachment bytes',
        binary: {
          contentType: 'application/octet-stream',
          headers: {
            'Content-Disposition': 'attachment; filename="<ASCII fallback>"; filename*=UTF-8\'\'<percent-encoded name>',
            'Content-Length': 'Size in bytes.',
            'X-Content-Type-Options': 'nosniff',
            'Repr-Digest': 'sha-256=:<base64 SHA-256 of the bytes>: (RFC 9530), when known.',
          },
        },
      },
      errors: ['invalid_request', 'not_found', 'service_unavailable'],
      async handle({ caller, params }) {
        const download = await deps.inbox.openAttachment(caller.orgId, params.id, params.attachmentId);
        return {
          status: 200,
          stream: download.stream,
          headers: {
            'Content-Type': 'application/octet-stream',
            'Content-Length': String(download.sizeBytes),
            'Content-Disposition': contentDisposition(download.attachment.filename),
            'X-Content-Type-Options': 'nosniff',
            'Cache-Control': 'private, no-store',
            ...(download.attachment.sha256 ? { 'Repr-Digest': reprDigest(download.attachment.sha256) } : {}),
          },
        };
      },
    }),
  ];
}
