import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmailEvent } from '../../db/entities/index.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

type Email = {
  _id: string;
  status: string;
  tags: string[];
  recipients: { email: string }[];
  events?: { type: string; recipient: string; occurred_at: string }[];
};
type Page = { pagination: { has_more: boolean; next_cursor: string | null } };

/** GET /outbox/emails (the email log, filtered, paged) and the timeline on GET /outbox/emails/{id}; tags on a send. */
describe('the email log', () => {
  let h: ApiHarness;
  let domain: string;
  let otherDomain: string;
  const sent: Record<string, string> = {};
  const send = (body: Record<string, unknown>) => h.request('POST', '/api/v1/outbox/emails', { body, headers: idem() });
  const list = async (query: string) => {
    const response = await h.request('GET', `/api/v1/outbox/emails${query}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return { emails: response.body.data as Email[], meta: response.body.meta as Page };
  };
  const ids = async (query: string) => (await list(query)).emails.map((email) => email._id);

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    const orgId = h.workspace.org.id;
    domain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    otherDomain = (await addSendingDomain(h.stack.orm, orgId)).domain;
    await setCredits(h.stack.orm, orgId, 1_000);
    const plan: [string, Record<string, unknown>][] = [
      ['receipt', { from: `shop@${domain}`, to: 'ada@example.com', tags: ['receipt', 'eu'] }],
      ['reset', { from: `auth@${domain}`, to: ['bob@example.com'], cc: ['ada@example.com'], tags: ['password-reset'] }],
      ['later', { from: `news@${otherDomain}`, to: 'cy@example.com', scheduled_at: 'in 2 hours', tags: ['receipt'] }],
      ['plain', { from: `shop@${domain}`, to: 'dee@example.com' }],
    ];
    for (const [name, fields] of plan) {
      const response = await send({ subject: name, text: 'Hello', ...fields });
      expect(response.status, JSON.stringify(response.body)).toBe(202);
      sent[name] = (response.body.data as Email)._id;
    }
  });
  afterAll(async () => h?.close());

  it("lists the workspace's emails newest first with their recipients and tags, and pages through them once", async () => {
    const { emails } = await list('');
    expect(emails.map((e) => e._id)).toEqual([sent.plain, sent.later, sent.reset, sent.receipt]);
    expect(emails.find((e) => e._id === sent.reset)).toMatchObject({
      tags: ['password-reset'],
      recipients: [{ email: 'bob@example.com' }, { email: 'ada@example.com' }],
    });
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: { emails: Email[]; meta: Page } = await list(`?limit=3${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
      seen.push(...page.emails.map((e) => e._id));
      cursor = page.meta.pagination.next_cursor;
    } while (cursor);
    expect(seen).toEqual([sent.plain, sent.later, sent.reset, sent.receipt]);
  });

  it('filters by status, recipient (to, cc or bcc), sender address or domain, tag and creation time', async () => {
    expect(await ids('?status=scheduled')).toEqual([sent.later]);
    expect(await ids('?to=ADA@example.com')).toEqual([sent.reset, sent.receipt]);
    expect(await ids(`?from=shop@${domain}`)).toEqual([sent.plain, sent.receipt]);
    expect(await ids(`?from=${otherDomain}`)).toEqual([sent.later]);
    expect(await ids('?tag=receipt')).toEqual([sent.later, sent.receipt]);
    expect(await ids('?tag=receipt&status=queued')).toEqual([sent.receipt]);
    expect(await ids('?created_after=2000-01-01T00:00:00Z&created_before=2000-01-02T00:00:00Z')).toEqual([]);
    expect(await ids(`?created_after=${encodeURIComponent(new Date(Date.now() - 3_600_000).toISOString())}`)).toHaveLength(4);
  });

  it('refuses bad filters and a cursor of another filter', async () => {
    for (const query of ['?status=lost', '?to=not-an-address', '?created_after=yesterday', '?template_id=xyz', '?tag=has%20space']) {
      expectError(await h.request('GET', `/api/v1/outbox/emails${query}`), 400, 'invalid_request');
    }
    const cursor = (await list('?limit=1&tag=receipt')).meta.pagination.next_cursor!;
    expectError(await h.request('GET', `/api/v1/outbox/emails?limit=1&cursor=${encodeURIComponent(cursor)}`), 400, 'invalid_request');
  });

  it('shows another workspace nothing', async () => {
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    const response = await apiClient(h.api.url, other.key)('GET', '/api/v1/outbox/emails');
    expect(response.body.data).toEqual([]);
    expectError(await apiClient(h.api.url, other.key)('GET', `/api/v1/outbox/emails/${sent.receipt}`), 404, 'not_found');
  });

  it("gives one email's timeline: its recipients' events, oldest first, and no one else's", async () => {
    const em = h.stack.orm.em.fork();
    const at = (s: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, s));
    const event = (emailId: string, type: 'sent' | 'delivered' | 'bounced', recipient: string, s: number) =>
      em.create(EmailEvent, { orgId: h.workspace.org.id, emailId, type, recipient, domain, occurredAt: at(s) });
    event(sent.reset!, 'delivered', 'bob@example.com', 2);
    event(sent.reset!, 'sent', 'bob@example.com', 1);
    event(sent.reset!, 'bounced', 'ada@example.com', 3);
    event(sent.receipt!, 'sent', 'ada@example.com', 1);
    await em.flush();
    const response = await h.request('GET', `/api/v1/outbox/emails/${sent.reset}`);
    expect((response.body.data as Email).events).toEqual([
      { type: 'sent', recipient: 'bob@example.com', occurred_at: at(1).toISOString() },
      { type: 'delivered', recipient: 'bob@example.com', occurred_at: at(2).toISOString() },
      { type: 'bounced', recipient: 'ada@example.com', occurred_at: at(3).toISOString() },
    ]);
  });

  it('takes up to 10 tags of up to 64 characters on a send, and refuses more', async () => {
    const base = { from: `shop@${domain}`, to: 'x@example.com', subject: 'tags', text: 'x' };
    const ten = Array.from({ length: 10 }, (_, i) => `t${i}`);
    expect((await send({ ...base, tags: ten })).status).toBe(202);
    expect((await send({ ...base, tags: ['a'.repeat(64)] })).status).toBe(202);
    expectError(await send({ ...base, tags: [...ten, 't10'] }), 400, 'invalid_request');
    expectError(await send({ ...base, tags: ['a'.repeat(65)] }), 400, 'invalid_request');
    expectError(await send({ ...base, tags: ['no spaces'] }), 400, 'invalid_request');
  });
});
