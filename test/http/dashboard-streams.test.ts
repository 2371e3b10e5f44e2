import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageStream } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { createStreamsService } from '../../src/modules/streams/streams.service.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's Streams page: list with today's sends against the budget, create, change, delete (the streams service). */
describe('the dashboard: message streams', () => {
  let h: ApiHarness;
  const signIn = async (orgId = h.workspace.org.id) =>
    (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: `${unique('p').toLowerCase()}@example.com` })).client;
  const rowsOf = (orgId: string) => h.stack.orm.em.fork().find(MessageStream, { orgId }, ALL_TENANTS);
  const name = () =>
    unique('s')
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '-');

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
  });
  afterAll(async () => h?.close());

  it('answers no page or form without a session, and refuses forms without the CSRF token', async () => {
    const anonymous = dashboardClient(h.api.url);
    for (const path of ['/dashboard/streams', '/dashboard/streams/broadcast']) expect((await anonymous.get(path)).status, path).toBe(303);
    expect((await anonymous.post('/dashboard/streams', { _csrf: 'x', name: 'nope', kind: 'broadcast' })).status).toBe(303);
    const client = await signIn();
    await client.get('/dashboard/streams');
    for (const [path, form] of [
      ['/dashboard/streams', { name: 'csrf-less', kind: 'broadcast' }],
      ['/dashboard/streams/transactional', { daily_cap: '5' }],
      ['/dashboard/streams/transactional/delete', {}],
    ] as const) {
      expect((await client.post(path, { _csrf: 'wrong', ...form })).status, path).toBe(403);
    }
    expect((await rowsOf(h.workspace.org.id)).map((r) => r.name)).not.toContain('csrf-less');
  });

  it('lists the built-in streams with an empty state for custom ones, creates one, shows its sends today against its budget', async () => {
    const { org } = await createOrg(h.stack.orm);
    const client = await signIn(org.id);
    const empty = await client.get('/dashboard/streams');
    expect(empty.status).toBe(200);
    expect(empty.text).toContain('No custom streams yet.');
    expect(empty.text).toMatch(/href="\/dashboard\/streams\/transactional">transactional<\/a> <span class="state">built-in/);
    expect(empty.text).toMatch(/href="\/dashboard\/streams"[^>]*aria-current="page">Streams</);
    const stream = name();
    const created = await client.post('/dashboard/streams', {
      _csrf: csrfOf(empty.text),
      name: stream,
      kind: 'transactional',
      description: '<b>receipts</b>',
      daily_cap: '500',
    });
    expect(created.status, created.text.slice(0, 300)).toBe(303);
    expect((await rowsOf(org.id)).map((r) => [r.name, r.kind, r.dailyCap])).toEqual([[stream, 'transactional', 500]]);

    // Two recipients accepted in the stream count against its budget.
    const domain = (await addSendingDomain(h.stack.orm, org.id)).domain;
    await setCredits(h.stack.orm, org.id, 10);
    const apiKey = await createApiKeysService({ orm: h.stack.orm }).createApiKey({ orgId: org.id, scopes: ['all'], name: 'streams' });
    const sent = await h.request('POST', '/api/v1/outbox/emails', {
      key: apiKey.key,
      headers: idem(),
      body: { from: `shop@${domain}`, to: ['a@example.com', 'b@example.com'], subject: 'Receipt', text: 'x', stream },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);

    const list = await client.get('/dashboard/streams?done=created');
    expect(list.text).toContain('Stream created.');
    expect(list.text).not.toContain('No custom streams yet.');
    expect(list.text).toContain(escaped('<b>receipts</b>'));
    expect(list.text).not.toContain('<b>receipts</b>');
    expect(list.text).toMatch(new RegExp(`${stream}</a></th>[\\s\\S]*?2 of 500 <meter`));
  });

  it('shows refusals by field: a malformed name, a taken name, a bad budget', async () => {
    const client = await signIn();
    const page = await client.get('/dashboard/streams');
    const bad = await client.post('/dashboard/streams', { _csrf: csrfOf(page.text), name: 'Not OK', kind: 'broadcast', daily_cap: '0' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('id="s-name-error"');
    expect(bad.text).toContain('id="s-daily_cap-error"');
    expect(bad.text).toContain('value="Not OK"');
    const taken = await client.post('/dashboard/streams', { _csrf: csrfOf(page.text), name: 'broadcast', kind: 'broadcast' });
    expect(taken.status).toBe(409);
    expect(taken.text).toContain('is already the name of a stream');
  });

  it("changes a stream's budget and description, clears the budget, deletes a custom stream but not a built-in one", async () => {
    const stream = name();
    await createStreamsService({ orm: h.stack.orm }).createStream(h.workspace.org.id, { name: stream, kind: 'broadcast' });
    const client = await signIn();
    const page = await client.get(`/dashboard/streams/${stream}`);
    expect(page.status).toBe(200);
    const saved = await client.post(`/dashboard/streams/${stream}`, { _csrf: csrfOf(page.text), daily_cap: '1000', description: 'Weekly' });
    expect(saved.status).toBe(303);
    const streams = createStreamsService({ orm: h.stack.orm });
    expect(await streams.getStream(h.workspace.org.id, stream)).toMatchObject({ dailyCap: 1000, description: 'Weekly' });
    const bad = await client.post(`/dashboard/streams/${stream}`, { _csrf: csrfOf(page.text), daily_cap: 'lots', description: 'x' });
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('id="s-daily_cap-error"');
    expect(
      (await client.post(`/dashboard/streams/${stream}`, { _csrf: csrfOf(page.text), daily_cap: '', description: 'Weekly' })).status,
    ).toBe(303);
    expect((await streams.getStream(h.workspace.org.id, stream)).dailyCap).toBeNull();

    const builtIn = await client.get('/dashboard/streams/broadcast');
    expect(builtIn.text).toContain('Built-in streams cannot be deleted.');
    expect((await client.post('/dashboard/streams/broadcast/delete', { _csrf: csrfOf(builtIn.text) })).status).toBe(409);
    const deleted = await client.post(`/dashboard/streams/${stream}/delete`, { _csrf: csrfOf(page.text) });
    expect(deleted.headers.get('location')).toBe('/dashboard/streams?done=deleted');
    expect((await rowsOf(h.workspace.org.id)).map((r) => r.name)).not.toContain(stream);
    expect((await client.get(`/dashboard/streams/${stream}`)).status).toBe(404);
  });

  it("answers 404 for another workspace's stream and changes nothing of it", async () => {
    const { org } = await createOrg(h.stack.orm);
    const theirs = name();
    await createStreamsService({ orm: h.stack.orm }).createStream(org.id, { name: theirs, kind: 'broadcast', description: 'Their plan' });
    const client = await signIn();
    const page = await client.get(`/dashboard/streams/${theirs}`);
    expect(page.status).toBe(404);
    expect(page.text).not.toContain('Their plan');
    expect((await client.get('/dashboard/streams/Bad%20Name')).status).toBe(404);
    const token = csrfOf((await client.get('/dashboard/streams')).text);
    expect((await client.post(`/dashboard/streams/${theirs}`, { _csrf: token, daily_cap: '1' })).status).toBe(404);
    expect((await client.post(`/dashboard/streams/${theirs}/delete`, { _csrf: token })).status).toBe(404);
    expect((await rowsOf(org.id)).map((r) => [r.name, r.dailyCap])).toEqual([[theirs, null]]);
  });
});
