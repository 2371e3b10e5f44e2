import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, Suppression } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { suppressAddress } from '../../src/modules/sends/suppression.repo.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's suppressions pages: list with reasons and dates, search, add, remove after saying what it does. */
describe('the dashboard: suppressions', () => {
  let h: ApiHarness;
  let domain: string;
  const person = () => `${unique('person').toLowerCase()}@example.com`;
  const signIn = async (orgId = h.workspace.org.id) => (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: person() })).client;
  const send = (to: string) =>
    h.request('POST', '/api/v1/outbox/emails', { headers: idem(), body: { from: `shop@${domain}`, to, subject: 'Hi', text: 'x' } });
  const entriesOf = (orgId: string) => h.stack.orm.em.fork().find(Suppression, { orgId }, ALL_TENANTS);

  beforeAll(async () => {
    h = await startApiHarness({ SEND_HANDOFF_WAIT_MS: '0' });
    domain = (await addSendingDomain(h.stack.orm, h.workspace.org.id)).domain;
    await setCredits(h.stack.orm, h.workspace.org.id, 1_000);
  });
  afterAll(async () => h?.close());

  it('answers no suppressions page or form without a session, and refuses forms without the CSRF token', async () => {
    await suppressAddress(h.stack.orm.em.fork(), h.workspace.org.id, 'kept@example.com', 'manual');
    const anonymous = dashboardClient(h.api.url);
    for (const path of ['/dashboard/suppressions', '/dashboard/suppressions/remove?email=kept@example.com']) {
      expect((await anonymous.get(path)).status, path).toBe(303);
    }
    expect((await anonymous.post('/dashboard/suppressions', { _csrf: 'x', email: 'new@example.com' })).status).toBe(303);
    expect((await anonymous.post('/dashboard/suppressions/remove', { _csrf: 'x', email: 'kept@example.com' })).status).toBe(303);
    const client = await signIn();
    await client.get('/dashboard/suppressions');
    expect((await client.post('/dashboard/suppressions', { _csrf: 'wrong', email: 'new@example.com' })).status).toBe(403);
    expect((await client.post('/dashboard/suppressions/remove', { _csrf: 'wrong', email: 'kept@example.com' })).status).toBe(403);
    const emails = (await entriesOf(h.workspace.org.id)).map((e) => e.email);
    expect(emails).toContain('kept@example.com');
    expect(emails).not.toContain('new@example.com');
  });

  it('lists with reasons and dates, searches, says what to do when empty, and escapes HTML', async () => {
    const { org } = await createOrg(h.stack.orm);
    const client = await signIn(org.id);
    expect((await client.get('/dashboard/suppressions')).text).toContain('No suppressed addresses.');
    await suppressAddress(h.stack.orm.em.fork(), org.id, 'gone@example.com', 'hard_bounce', { detail: '<b>550</b> no such user' });
    await suppressAddress(h.stack.orm.em.fork(), org.id, 'spam@example.com', 'complaint');
    const page = await client.get('/dashboard/suppressions');
    expect(page.text).toMatch(/gone@example\.com<\/th>[\s\S]*?hard bounce[\s\S]*?<time datetime=/);
    expect(page.text).toContain(escaped('<b>550</b> no such user'));
    expect(page.text).not.toContain('<b>550</b>');
    const search = await client.get('/dashboard/suppressions?email=SPAM@example.com');
    expect(search.text).toContain('spam@example.com');
    expect(search.text).not.toContain('gone@example.com');
    const byReason = await client.get('/dashboard/suppressions?reason=bounce');
    expect(byReason.text).toContain('gone@example.com');
    expect(byReason.text).not.toContain('spam@example.com');
    expect((await client.get('/dashboard/suppressions?reason=nope')).status).toBe(400);
    expect((await client.get(`/dashboard/suppressions?email=${'a'.repeat(320)}@x.com`)).status).toBe(400);
  });

  it('adds an address (sends to it are then refused), refuses a bad or repeated one, and removes it after saying what that does', async () => {
    const client = await signIn();
    const address = `${unique('stop').toLowerCase()}@example.com`;
    const added = await client.submit('/dashboard/suppressions', '/dashboard/suppressions', {
      email: ` ${address.toUpperCase()} `,
      detail: 'asked by phone',
    });
    expect(added.status, added.text.slice(0, 300)).toBe(201);
    expect(added.text).toContain(`${address} is suppressed`);
    const refused = await send(address);
    expect(refused.status).toBe(403);
    expect((refused.body.error?.details as { reason?: string }).reason).toBe('RECIPIENT_SUPPRESSED');

    const again = await client.submit('/dashboard/suppressions', '/dashboard/suppressions', { email: address });
    expect(again.status).toBe(409);
    for (const [email, detail] of [
      ['not-an-address', ''],
      [`${'a'.repeat(320)}@example.com`, ''],
      ['ok@example.com', 'd'.repeat(1025)],
    ]) {
      const bad = await client.submit('/dashboard/suppressions', '/dashboard/suppressions', { email: email!, detail: detail! });
      expect(bad.status, email).toBe(400);
    }

    const em = scopeToOrg(h.stack.orm.em.fork(), h.workspace.org.id);
    em.create(Contact, { orgId: h.workspace.org.id, email: address, tags: [], customFields: {}, status: 'suppressed' });
    await em.flush();
    const confirm = await client.get(`/dashboard/suppressions/remove?email=${encodeURIComponent(address)}`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('Sends to it will pass again');
    expect(confirm.text).toContain('goes back to active');
    const removed = await client.submit(
      `/dashboard/suppressions/remove?email=${encodeURIComponent(address)}`,
      '/dashboard/suppressions/remove',
      { email: address },
    );
    expect(removed.status).toBe(303);
    expect((await entriesOf(h.workspace.org.id)).map((e) => e.email)).not.toContain(address);
    expect((await h.stack.orm.em.fork().findOneOrFail(Contact, { email: address }, ALL_TENANTS)).status).toBe('active');
    expect((await send(address)).status).toBe(202);
  });

  it("answers 404 for another workspace's suppression and leaves it", async () => {
    const { org } = await createOrg(h.stack.orm);
    await suppressAddress(h.stack.orm.em.fork(), org.id, 'theirs@example.com', 'manual');
    const client = await signIn();
    expect((await client.get('/dashboard/suppressions/remove?email=theirs@example.com')).status).toBe(404);
    expect((await client.get('/dashboard/suppressions')).text).not.toContain('theirs@example.com');
    const removed = await client.submit('/dashboard/suppressions', '/dashboard/suppressions/remove', { email: 'theirs@example.com' });
    expect(removed.status).toBe(404);
    expect((await entriesOf(org.id)).map((e) => e.email)).toEqual(['theirs@example.com']);
  });
});
