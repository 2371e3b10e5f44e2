import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxMessage, InboxThread } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { lockWorkspaceThreads, placeInThread } from '../../src/modules/inbox/thread-placement.repo.ts';
import { SUBJECT_THREAD_WINDOW_MS, type ThreadingInput } from '../../src/modules/inbox/threading.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * The threading rules as thread-placement.repo.ts applies them in SQL: reply by Message-ID
 * (In-Reply-To, then References newest first), else subject plus a shared participant (the
 * outside ones when both sides have some) inside the window, else a new thread; the thread's
 * counters move; concurrent messages of one new conversation open one thread.
 */
describe('thread placement (SQL)', () => {
  let stack: TestStack;
  let orgId: string;
  let otherOrgId: string;

  beforeAll(async () => {
    stack = await createTestStack();
    orgId = (await createOrg(stack.orm)).org.id;
    otherOrgId = (await createOrg(stack.orm)).org.id;
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId,
      domain: 'acme.example',
      verified: true,
    });
  });
  afterAll(() => stack?.close());

  const base = new Date('2026-06-01T12:00:00Z');
  const input = (over: Partial<ThreadingInput>): ThreadingInput => ({
    subject: 'Order 1',
    inReplyTo: null,
    references: [],
    participants: [],
    at: base,
    ...over,
  });

  /** Places a message and records it (with `rfcMessageId`) as ingestion does, in one transaction. */
  async function place(org: string, message: ThreadingInput, rfcMessageId: string | null = null) {
    return scopeToOrg(stack.orm.em, org).transactional(async (em) => {
      await lockWorkspaceThreads(em, org, message);
      const placed = await placeInThread(em, org, message);
      const id = newId();
      await em.execute(
        `insert into inbox_messages (id, org_id, thread_id, direction, rfc_message_id, attachment_ingest_status, created_at, updated_at)
         values (?, ?, ?, 'inbound', ?, 'ready', ?, now())`,
        [id, org, placed.threadId, rfcMessageId, message.at.toISOString()],
      );
      return { ...placed, messageId: id };
    });
  }

  const thread = (id: string) => scopeToOrg(stack.orm.em, orgId).findOneOrFail(InboxThread, { id }, { refresh: true });

  it('opens a thread, then joins it by subject and a shared outside participant, moving its counters', async () => {
    const first = await place(orgId, input({ subject: 'Invoice 7', participants: ['support@acme.example', 'jo@client.example'] }));
    expect(first.parentId).toBeNull();
    const later = new Date(base.getTime() + 60_000);
    const second = await place(
      orgId,
      input({
        subject: 'Re: [ext] invoice 7',
        participants: ['Support@acme.example', 'jo@client.example', 'kim@client.example'],
        at: later,
      }),
    );
    expect(second.threadId).toBe(first.threadId);
    const joined = await thread(first.threadId);
    expect(joined).toMatchObject({ messageCount: 2, participants: ['support@acme.example', 'jo@client.example', 'kim@client.example'] });
    expect(joined.lastMessageAt.getTime()).toBe(later.getTime());
  });

  it("does not join by subject when only the workspace's own address is shared with an outside conversation", async () => {
    const first = await place(orgId, input({ subject: 'Receipt 9', participants: ['shop@acme.example', 'a@client.example'] }));
    const other = await place(orgId, input({ subject: 'Receipt 9', participants: ['shop@acme.example', 'b@other.example'] }));
    expect(other.threadId).not.toBe(first.threadId);
  });

  it('counts own addresses for internal mail', async () => {
    const first = await place(orgId, input({ subject: 'Standup', participants: ['a@acme.example', 'b@acme.example'] }));
    const same = await place(orgId, input({ subject: 'Standup', participants: ['b@acme.example'] }));
    const apart = await place(orgId, input({ subject: 'Standup', participants: ['c@acme.example'] }));
    expect(same.threadId).toBe(first.threadId);
    expect(apart.threadId).not.toBe(first.threadId);
  });

  it("joins by subject up to the window after the thread's last message and not one millisecond past it", async () => {
    const first = await place(orgId, input({ subject: 'Window A', participants: ['x@client.example'] }));
    const atEdge = await place(
      orgId,
      input({ subject: 'Window A', participants: ['x@client.example'], at: new Date(base.getTime() + SUBJECT_THREAD_WINDOW_MS) }),
    );
    expect(atEdge.threadId).toBe(first.threadId);
    const other = await place(orgId, input({ subject: 'Window B', participants: ['y@client.example'] }));
    const past = await place(
      orgId,
      input({ subject: 'Window B', participants: ['y@client.example'], at: new Date(base.getTime() + SUBJECT_THREAD_WINDOW_MS + 1) }),
    );
    expect(past.threadId).not.toBe(other.threadId);
  });

  it('threads a reply by In-Reply-To first, then by References newest first, and records its parent', async () => {
    const a = await place(orgId, input({ subject: 'Topic A', participants: ['p@client.example'] }), 'a@mail.example');
    const b = await place(orgId, input({ subject: 'Topic B', participants: ['q@client.example'] }), 'b@mail.example');
    const byReply = await place(orgId, input({ subject: 'anything', inReplyTo: 'a@mail.example', references: ['b@mail.example'] }));
    expect(byReply).toMatchObject({ threadId: a.threadId, parentId: a.messageId });
    const byReferences = await place(orgId, input({ subject: 'anything else', references: ['a@mail.example', 'b@mail.example'] }));
    expect(byReferences).toMatchObject({ threadId: b.threadId, parentId: b.messageId });
    const unknown = await place(orgId, input({ subject: 'Topic A', inReplyTo: 'nobody@mail.example', participants: ['p@client.example'] }));
    expect(unknown).toMatchObject({ threadId: a.threadId, parentId: null });
  });

  it("never reaches another workspace's threads or messages", async () => {
    const mine = await place(orgId, input({ subject: 'Shared subject', participants: ['z@client.example'] }), 'mine@mail.example');
    const theirs = await place(
      otherOrgId,
      input({ subject: 'Shared subject', inReplyTo: 'mine@mail.example', participants: ['z@client.example'] }),
    );
    expect(theirs.threadId).not.toBe(mine.threadId);
    expect(theirs.parentId).toBeNull();
  });

  it('opens one thread for messages of one new conversation placed concurrently', async () => {
    const message = input({ subject: 'Burst', participants: ['burst@client.example'] });
    const placed = await Promise.all(Array.from({ length: 8 }, () => place(orgId, message)));
    expect(new Set(placed.map((p) => p.threadId)).size).toBe(1);
    expect((await thread(placed[0]!.threadId)).messageCount).toBe(8);
    const messages = await scopeToOrg(stack.orm.em, orgId).count(InboxMessage, { threadId: placed[0]!.threadId });
    expect(messages).toBe(8);
  });
});
