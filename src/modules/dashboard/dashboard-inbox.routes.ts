import type { InboxAttachment, InboxMessage } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import type { ApiServices } from '../../api-composition.ts';
import { contentDisposition } from '../inbox/inbox.fns.ts';
import type { InboxCaller } from '../inbox/inbox.service.ts';
import { isError, type DashboardArea, type DashboardKit, form, one } from './dashboard-kit.router.ts';
import { notePage } from './dashboard.pages.ts';
import { inboxPage, threadPage } from './dashboard-inbox.pages.ts';

const THREADS_PER_PAGE = 50;
/** A thread page reads its messages 100 at a time, at most this many pages. */
const MESSAGES_PER_READ = 100;
const MESSAGE_READS = 5;
const ID = /^[0-9a-fA-F]{24}$/;

/** The `older` parameter of the thread list: the last thread's last_message_at at full precision, and its id. */
const olderOf = (sortKey: string, id: string) => `${sortKey}_${id}`;

/** The keyset position an `older` parameter names; undefined (the first page) when absent or malformed. */
export function threadPositionOf(older: string | string[] | undefined): KeysetPosition | undefined {
  const match = typeof older === 'string' ? /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?Z)_([0-9a-fA-F]{24})$/.exec(older) : null;
  if (!match) return undefined;
  const sortValue = new Date(match[1]!);
  return Number.isNaN(sortValue.getTime()) ? undefined : { sortValue, id: match[2]!.toLowerCase(), sortText: match[1]! };
}

/**
 * The inbox pages of the dashboard (/dashboard/inbox): threads, a thread's messages (HTML bodies
 * only sandboxed), marking a thread read or unread, and attachment downloads streamed through
 * the inbox service (the workspace's own attachments only, always as a download).
 */
export function inboxArea(services: ApiServices): DashboardArea {
  return (router, kit: DashboardKit) => {
    threadListRoutes(router, kit, services);
    threadRoutes(router, kit, services);
    attachmentRoutes(router, kit, services);
  };
}

type Router = Parameters<DashboardArea>[0];

/** The threads, newest first, with keyset paging. */
function threadListRoutes(router: Router, kit: DashboardKit, { inbox }: Pick<ApiServices, 'inbox'>): void {
  router.get('/inbox', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const page = await inbox.listThreads(signedIn.orgId, {}, { limit: THREADS_PER_PAGE, after: threadPositionOf(ctx.query.older) });
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      inboxPage({
        signedIn,
        threads: page.items.map((item) => item.row),
        summaries: page,
        older: page.hasMore && last ? olderOf(last.sortKey, last.row.id) : undefined,
      }),
    );
  });
}

/**
 * A thread's messages through the API's message list (updated_at order, MESSAGE_READS pages at
 * most), then by date; `more` when some were left unread.
 */
async function threadMessages(inbox: ApiServices['inbox'], caller: InboxCaller, threadId: string) {
  const messages: InboxMessage[] = [];
  const attachments = new Map<string, InboxAttachment[]>();
  let after: KeysetPosition | undefined;
  let more = true;
  for (let read = 0; read < MESSAGE_READS && more; read += 1) {
    const page = await inbox.listMessages(caller, { thread_id: threadId, scope: 'team' }, { limit: MESSAGES_PER_READ, after });
    for (const item of page.items) messages.push(item.row);
    for (const [messageId, list] of page.attachments) attachments.set(messageId, list);
    const last = page.items.at(-1);
    after = last ? { sortValue: last.row.updatedAt, id: last.row.id, sortText: last.sortKey } : undefined;
    more = page.hasMore;
  }
  messages.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime() || a.id.localeCompare(b.id));
  return { messages, attachments, more };
}

/** A thread's page, and marking it read or unread. */
function threadRoutes(router: Router, kit: DashboardKit, { inbox, inboxState }: Pick<ApiServices, 'inbox' | 'inboxState'>): void {
  const { notFound } = kit;
  router.get('/inbox/threads/:id', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const id = ctx.params.id ?? '';
    if (!ID.test(id)) return notFound(ctx, 'conversation');
    let view;
    try {
      view = await inbox.getThread(signedIn.orgId, id);
    } catch (error) {
      if (isError(error, 'not_found')) return notFound(ctx, 'conversation');
      throw error;
    }
    const caller: InboxCaller = { orgId: signedIn.orgId, actorUserId: signedIn.userId, keyId: null };
    const { messages, attachments, more } = await threadMessages(inbox, caller, view.thread.id);
    kit.send(
      ctx,
      200,
      threadPage({
        signedIn,
        thread: view.thread,
        unreadCount: view.summary.unreadCounts.get(view.thread.id) ?? 0,
        messages,
        attachments,
        truncated: more,
        ...(ctx.query.marked === 'read'
          ? { notice: 'Marked as read.' }
          : ctx.query.marked === 'unread'
            ? { notice: 'Marked as unread.' }
            : {}),
      }),
    );
  });

  router.post('/inbox/threads/:id/read', kit.forms, kit.requireSession, async (ctx) => {
    const id = ctx.params.id ?? '';
    if (!ID.test(id)) return notFound(ctx, 'conversation');
    const read = one(form(ctx).read) !== 'false';
    try {
      await inboxState.updateThread(kit.signedInOf(ctx).orgId, id, { read });
    } catch (error) {
      if (isError(error, 'not_found')) return notFound(ctx, 'conversation');
      throw error;
    }
    ctx.redirect(`/dashboard/inbox/threads/${id.toLowerCase()}?marked=${read ? 'read' : 'unread'}`);
    ctx.status = 303;
  });
}

/** An attachment's download, streamed through the inbox service (the workspace's own only). */
function attachmentRoutes(router: Router, kit: DashboardKit, { inbox }: Pick<ApiServices, 'inbox'>): void {
  const { notFound } = kit;
  router.get('/inbox/messages/:id/attachments/:attachmentId', kit.requireSession, async (ctx) => {
    const messageId = ctx.params.id ?? '';
    const attachmentId = ctx.params.attachmentId ?? '';
    if (!ID.test(messageId) || !ID.test(attachmentId)) return notFound(ctx, 'attachment');
    let download;
    try {
      download = await inbox.openAttachment(kit.signedInOf(ctx).orgId, messageId, attachmentId);
    } catch (error) {
      if (isError(error, 'not_found')) return notFound(ctx, 'attachment');
      if (isError(error, 'service_unavailable')) {
        return kit.send(
          ctx,
          503,
          notePage('Attachments are unavailable', 'Attachment storage is not configured on this server.', kit.signedInOf(ctx)),
        );
      }
      throw error;
    }
    ctx.status = 200;
    ctx.body = download.stream;
    // Always a download of opaque bytes, whatever the sender declared (never rendered by the browser).
    ctx.set({
      'Content-Type': 'application/octet-stream',
      'Content-Length': String(download.sizeBytes),
      'Content-Disposition': contentDisposition(download.attachment.filename),
      'X-Content-Type-Options': 'nosniff',
      'Cache-Control': 'private, no-store',
    });
  });
}
