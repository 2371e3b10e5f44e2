import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { INBOX_LIMITS } from '../../src/modules/inbox/inbox.schemas.ts';
import { placeInThread } from '../../src/modules/inbox/thread-placement.repo.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf, type ApiResponse } from '../support/http.ts';
import { insertMessage, insertThread } from '../support/inbox-rows.ts';

type Thread = { id: string; unread_count: number; starred: boolean; archived: boolean; tags: string[]; updated_at: string };
type Message = { id: string; read: boolean; read_at: string | null; starred: boolean; tags: string[]; updated_at: string };

const dataOf = <T>(response: ApiResponse): T => {
  expect(response.status, JSON.stringify(response.body)).toBe(200);
  return response.body.data as T;
};

describe('thread and message state (PATCH /inbox/threads/{id}, /inbox/messages/{id})', () => {
  let h: ApiHarness;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => h?.close());

  const workspace = async (scopes = ['all']) => {
    const ws = await createOrgWithKey(h.stack.orm, { scopes, rateLimitPerMinute: 100_000, burst: 10_000 });
    const request = apiClient(h.api.url, ws.key);
    return {
      ...ws,
      request,
      patchThread: (id: string, body: unknown) => request('PATCH', `/api/v1/inbox/threads/${id}`, { body, headers: idem() }),
      patchMessage: (id: string, body: unknown) => request('PATCH', `/api/v1/inbox/messages/${id}`, { body, headers: idem() }),
      threads: async (query = '') => dataOf<Thread[]>(await request('GET', `/api/v1/inbox/threads${query}`)),
      message: async (id: string) => dataOf<Message>(await request('GET', `/api/v1/inbox/messages/${id}`)),
    };
  };

  /** A thread with two received messages and one sent, oldest first. */
  async function conversation(ws: Awaited<ReturnType<typeof workspace>>) {
    const thread = await insertThread(h.stack.orm, ws.org.id, { messageCount: 3 });
    const at = (minutes: number) => new Date(Date.UTC(2026, 10, 20, 9, minutes));
    const first = await insertMessage(h.stack.orm, ws.org.id, { threadId: thread.id, createdAt: at(0) });
    const second = await insertMessage(h.stack.orm, ws.org.id, { threadId: thread.id, createdAt: at(5) });
    const reply = await insertMessage(h.stack.orm, ws.org.id, {
      threadId: thread.id,
      direction: 'outbound',
      createdAt: at(9),
      readAt: at(9),
    });
    return { thread, first, second, reply };
  }

  it('counts unread messages per thread and marks a whole thread read, moving updated_at of what changed only', async () => {
    const ws = await workspace();
    const { thread, first, second, reply } = await conversation(ws);
    expect((await ws.threads())[0]).toMatchObject({ id: thread.id, unread_count: 2, starred: false, archived: false, tags: [] });
    const replyBefore = await ws.message(reply.id);
    expect(replyBefore).toMatchObject({ read: true });

    const updated = dataOf<Thread>(await ws.patchThread(thread.id, { read: true }));
    expect(updated.unread_count).toBe(0);
    expect(Date.parse(updated.updated_at)).toBeGreaterThan(thread.updatedAt.getTime() - 1);
    for (const id of [first.id, second.id]) {
      const message = await ws.message(id);
      expect(message.read).toBe(true);
      expect(message.read_at).not.toBeNull();
      expect(Date.parse(message.updated_at)).toBeGreaterThanOrEqual(Date.parse(message.read_at!));
    }
    // The sent message was already read: untouched.
    expect((await ws.message(reply.id)).updated_at).toBe(replyBefore.updated_at);

    // Pollers see the two messages whose state changed.
    const polled = dataOf<Message[]>(
      await ws.request('GET', `/api/v1/inbox/messages?thread_id=${thread.id}&updated_after=${encodeURIComponent(updated.updated_at)}`),
    );
    expect(polled.map((m) => m.id).sort()).toEqual([first.id, second.id].sort());

    // Nothing left to change: updated_at stays.
    const again = dataOf<Thread>(await ws.patchThread(thread.id, { read: true }));
    expect(again.updated_at).toBe(updated.updated_at);
  });

  it('marks the latest received message unread with read: false', async () => {
    const ws = await workspace();
    const { thread, first, second, reply } = await conversation(ws);
    await ws.patchThread(thread.id, { read: true });
    const updated = dataOf<Thread>(await ws.patchThread(thread.id, { read: false }));
    expect(updated.unread_count).toBe(1);
    expect((await ws.message(second.id)).read).toBe(false);
    expect((await ws.message(first.id)).read).toBe(true);
    expect((await ws.message(reply.id)).read).toBe(true);
  });

  it('stars, archives and tags a thread, and filters the list by each', async () => {
    const ws = await workspace();
    const { thread } = await conversation(ws);
    const other = await insertThread(h.stack.orm, ws.org.id);
    const updated = dataOf<Thread>(await ws.patchThread(thread.id, { starred: true, archived: true, tags: ['billing', 'vip', 'billing'] }));
    expect(updated).toMatchObject({ starred: true, archived: true, tags: ['billing', 'vip'] });
    expect((await ws.threads('?archived=false')).map((t) => t.id)).toEqual([other.id]);
    expect((await ws.threads('?archived=true')).map((t) => t.id)).toEqual([thread.id]);
    expect((await ws.threads('?starred=true')).map((t) => t.id)).toEqual([thread.id]);
    expect((await ws.threads('?tag=vip')).map((t) => t.id)).toEqual([thread.id]);
    expect((await ws.threads('?tag=nope')).map((t) => t.id)).toEqual([]);
    expect((await ws.threads('?unread=true')).map((t) => t.id)).toEqual([thread.id]);
    expect((await ws.threads('?unread=false')).map((t) => t.id)).toEqual([other.id]);

    const edited = dataOf<Thread>(await ws.patchThread(thread.id, { add_tags: ['urgent', 'vip'], remove_tags: ['billing'] }));
    expect(edited.tags).toEqual(['vip', 'urgent']);
    // GET /inbox/threads/{id} answers the thread as the list and the PATCH do.
    const single = dataOf<Thread>(await ws.request('GET', `/api/v1/inbox/threads/${thread.id}`));
    expect(single).toEqual(edited);
    expect((await ws.threads('?tag=urgent'))[0]).toEqual(single);
  });

  it('brings an archived thread back when a message is received on it', async () => {
    const ws = await workspace();
    const { thread, second } = await conversation(ws);
    await ws.patchThread(thread.id, { archived: true });
    await h.stack.orm.em.fork().transactional((tx) =>
      placeInThread(tx, ws.org.id, {
        subject: thread.subject,
        inReplyTo: second.rfcMessageId ?? null,
        references: [],
        participants: ['alice@example.com'],
        at: new Date(),
      }),
    );
    expect((await ws.threads()).find((t) => t.id === thread.id)).toMatchObject({ archived: false });
  });

  it('marks a message read and unread, stars and tags it', async () => {
    const ws = await workspace();
    const { first } = await conversation(ws);
    const read = dataOf<Message>(await ws.patchMessage(first.id, { read: true, starred: true, tags: ['todo'] }));
    expect(read).toMatchObject({ id: first.id, read: true, starred: true, tags: ['todo'] });
    const unread = dataOf<Message>(await ws.patchMessage(first.id, { read: false, remove_tags: ['todo'] }));
    expect(unread).toMatchObject({ read: false, read_at: null, starred: true, tags: [] });
    expect(Date.parse(unread.updated_at)).toBeGreaterThanOrEqual(Date.parse(read.updated_at));
    // An empty body changes nothing.
    expect(dataOf<Message>(await ws.patchMessage(first.id, {})).updated_at).toBe(unread.updated_at);
  });

  it(`holds ${INBOX_LIMITS.tagsMax} tags and refuses one more, and tags with add_tags together`, async () => {
    const ws = await workspace();
    const { thread, first } = await conversation(ws);
    const full = Array.from({ length: INBOX_LIMITS.tagsMax }, (_, i) => `t${i}`);
    expect(dataOf<Thread>(await ws.patchThread(thread.id, { tags: full })).tags).toEqual(full);
    const over = await ws.patchThread(thread.id, { add_tags: ['one-more'] });
    expectError(over, 400, 'invalid_request');
    expect(fieldsOf(over).map((f) => f.path)).toEqual(['add_tags']);
    expect((await ws.threads())[0]!.tags).toEqual(full);
    expectError(await ws.patchThread(thread.id, { tags: [...full, 'x'] }), 400, 'invalid_request');
    const both = await ws.patchMessage(first.id, { tags: ['a'], add_tags: ['b'] });
    expectError(both, 400, 'invalid_request');
    expect(fieldsOf(both).map((f) => f.path)).toEqual(['tags']);
    const long = 'x'.repeat(INBOX_LIMITS.tagMax);
    expect(dataOf<Message>(await ws.patchMessage(first.id, { tags: [long] })).tags).toEqual([long]);
    expectError(await ws.patchMessage(first.id, { tags: [`${long}x`] }), 400, 'invalid_request');
    expectError(await ws.patchMessage(first.id, { tags: ['has space'] }), 400, 'invalid_request');
    expectError(await ws.patchMessage(first.id, { read: 'yes' }), 400, 'invalid_request');
    expectError(await ws.patchThread(thread.id, { pinned: true }), 400, 'invalid_request');
    expectError(await ws.request('GET', '/api/v1/inbox/threads?archived=maybe'), 400, 'invalid_request');
  });

  it('answers 404 for a thread or message of another workspace and 403 without inbox.threads:write', async () => {
    const ws = await workspace();
    const other = await workspace();
    const { thread, first } = await conversation(other);
    expectError(await ws.patchThread(thread.id, { starred: true }), 404, 'not_found');
    expectError(await ws.patchMessage(first.id, { starred: true }), 404, 'not_found');
    expectError(await ws.request('GET', `/api/v1/inbox/threads/${thread.id}`), 404, 'not_found');
    const reader = await workspace(['inbox.threads:read']);
    const own = await conversation(reader);
    expectError(await reader.patchThread(own.thread.id, { starred: true }), 403, 'missing_scope');
    expect((await other.threads())[0]).toMatchObject({ starred: false });
  });
});
