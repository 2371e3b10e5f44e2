import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Broadcast, Domain, Organization, SenderIdentity } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { POSTAL_ADDRESS_MAX, WORKSPACE_NAME_MAX } from '../../src/modules/orgs/orgs.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';

/** Text as the pages' templates escape it (ghtml: " & ' < = > as numeric references). */
const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The workspace settings page, and a domain's senders and deletion. */
describe('the dashboard: workspace settings, domain senders and deletion', () => {
  let h: ApiHarness;
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const signIn = async (orgId: string, role: 'owner' | 'member') =>
    (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: email(), role })).client;
  const orgRow = (id: string) => h.stack.orm.em.fork().findOneOrFail(Organization, { id });
  const domainRow = (id: string) => h.stack.orm.em.fork().findOne(Domain, { id }, ALL_TENANTS);
  const sendersOf = (domainId: string) =>
    h.stack.orm.em.fork().find(SenderIdentity, { domainId }, { ...ALL_TENANTS, orderBy: { email: 'asc' } });

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers no page without a session (303 to sign-in) and changes nothing', async () => {
    const { org } = await createOrg(h.stack.orm);
    const domain = await addSendingDomain(h.stack.orm, org.id);
    const client = dashboardClient(h.api.url);
    for (const path of ['/dashboard/settings', `/dashboard/domains/${domain.id}/delete`]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    for (const path of ['/dashboard/settings', `/dashboard/domains/${domain.id}/delete`, `/dashboard/domains/${domain.id}/senders`]) {
      expect((await client.post(path, { _csrf: 'x', name: 'Taken', email: `a@${domain.domain}` })).status, path).toBe(303);
    }
    expect(await orgRow(org.id)).toMatchObject({ name: org.name });
    expect(await domainRow(domain.id)).not.toBeNull();
    expect(await sendersOf(domain.id)).toHaveLength(0);
  });

  it('lets an owner rename the workspace and set its postal address, escaped on the page', async () => {
    const { org } = await createOrg(h.stack.orm);
    const owner = await signIn(org.id, 'owner');
    const name = '<b>Acme</b> & "Sons"';
    const saved = await owner.submit('/dashboard/settings', '/dashboard/settings', { name, postal_address: '1 Main St\nSpringfield' });
    expect(saved.status, saved.text.slice(0, 1000)).toBe(303);
    expect(await orgRow(org.id)).toMatchObject({ name, postalAddress: '1 Main St\nSpringfield' });
    const page = await owner.get('/dashboard/settings?saved=1');
    expect(page.text).toContain(escaped(name));
    expect(page.text).not.toContain('<b>Acme</b>');
    expect(page.text).toContain('The settings were saved.');
    // An empty address removes it.
    await owner.submit('/dashboard/settings', '/dashboard/settings', { name: 'Acme', postal_address: '  ' });
    expect(await orgRow(org.id)).toMatchObject({ name: 'Acme', postalAddress: null });
  });

  it.each([
    [{ name: '', postal_address: '' }, 'the workspace name must be 1 to 200 characters'],
    [{ name: 'x'.repeat(WORKSPACE_NAME_MAX + 1), postal_address: '' }, 'the workspace name must be 1 to 200 characters'],
    [{ name: 'Acme', postal_address: 'x'.repeat(POSTAL_ADDRESS_MAX + 1) }, 'the postal address must be at most 500 characters'],
  ])('refuses %# with 400, keeps what was typed and changes nothing', async (fields, problem) => {
    const { org } = await createOrg(h.stack.orm);
    const owner = await signIn(org.id, 'owner');
    const form = await owner.get('/dashboard/settings');
    expect(form.text).toContain(`maxlength="${POSTAL_ADDRESS_MAX}"`);
    const refused = await owner.submit('/dashboard/settings', '/dashboard/settings', fields);
    expect(refused.status).toBe(400);
    expect(refused.text).toContain(problem);
    expect(await orgRow(org.id)).toMatchObject({ name: org.name, postalAddress: null });
  });

  it('shows a member the settings without a form, and refuses their post with 403', async () => {
    const { org } = await createOrg(h.stack.orm);
    const member = await signIn(org.id, 'member');
    const page = await member.get('/dashboard/settings');
    expect(page.status).toBe(200);
    expect(page.text).not.toContain('name="postal_address"');
    expect(page.text).toContain('Only an owner of the workspace can change these settings.');
    const refused = await member.submit('/dashboard/settings', '/dashboard/settings', { name: 'Hijacked', postal_address: 'x' });
    expect(refused.status).toBe(403);
    expect(await orgRow(org.id)).toMatchObject({ name: org.name });
  });

  it('refuses the settings form without its CSRF token (403)', async () => {
    const { org } = await createOrg(h.stack.orm);
    const owner = await signIn(org.id, 'owner');
    expect((await owner.post('/dashboard/settings', { _csrf: 'wrong', name: 'Hijacked' })).status).toBe(403);
    expect(await orgRow(org.id)).toMatchObject({ name: org.name });
  });

  it("adds and removes a domain's senders, with the domains service's rules", async () => {
    const { org } = await createOrg(h.stack.orm);
    const domain = await addSendingDomain(h.stack.orm, org.id);
    const member = await signIn(org.id, 'member');
    const path = `/dashboard/domains/${domain.id}`;
    const added = await member.submit(path, `${path}/senders`, { name: '<i>Support</i>', email: `support@${domain.domain}` });
    expect(added.status, added.text.slice(0, 500)).toBe(303);
    const offDomain = await member.submit(path, `${path}/senders`, { name: 'Sales', email: 'sales@elsewhere.example.com' });
    expect(offDomain.status).toBe(400);
    expect(offDomain.text).toContain(`is not an address on ${domain.domain}`);
    expect(offDomain.text).toContain('value="sales@elsewhere.example.com"');
    const tooLong = await member.submit(path, `${path}/senders`, { name: 'x'.repeat(201), email: `long@${domain.domain}` });
    expect(tooLong.status).toBe(400);
    await member.submit(path, `${path}/senders`, { name: 'Billing', email: `billing@${domain.domain}` });
    const [billing, support] = await sendersOf(domain.id);
    expect(support).toMatchObject({ name: '<i>Support</i>', isDefault: true });
    const page = await member.get(path);
    expect(page.text).toContain(escaped('<i>Support</i>'));
    const removed = await member.submit(path, `${path}/senders/${support!.id}/remove`, {});
    expect(removed.status).toBe(303);
    expect(await sendersOf(domain.id)).toMatchObject([{ id: billing!.id, isDefault: true }]);
  });

  it('lets only an owner delete a domain, after a page that says what it does', async () => {
    const { org } = await createOrg(h.stack.orm);
    const first = await addSendingDomain(h.stack.orm, org.id, { domain: `a-${unique('d').toLowerCase()}.example.com` });
    const second = await addSendingDomain(h.stack.orm, org.id, { domain: `b-${unique('d').toLowerCase()}.example.com` });
    await h.stack.orm.em.fork().nativeUpdate(Domain, { id: first.id }, { isDefault: true }, ALL_TENANTS);
    const member = await signIn(org.id, 'member');
    expect((await member.get(`/dashboard/domains/${first.id}/delete`)).status).toBe(403);
    expect((await member.submit(`/dashboard/domains/${first.id}`, `/dashboard/domains/${first.id}/delete`, {})).status).toBe(403);
    expect(await domainRow(first.id)).not.toBeNull();

    const owner = await signIn(org.id, 'owner');
    const confirm = await owner.get(`/dashboard/domains/${first.id}/delete`);
    expect(confirm.status).toBe(200);
    expect(confirm.text).toContain('The workspace can no longer send from addresses on');
    expect(confirm.text).toContain('another domain becomes the default');
    const deleted = await owner.submit(`/dashboard/domains/${first.id}/delete`, `/dashboard/domains/${first.id}/delete`, {});
    expect(deleted.status).toBe(303);
    expect(deleted.headers.get('location')).toBe('/dashboard/domains?deleted=1');
    expect(await domainRow(first.id)).toBeNull();
    expect(await domainRow(second.id)).toMatchObject({ isDefault: true });
  });

  it('refuses to delete a domain with mail still on its way (409), saying why', async () => {
    const { org } = await createOrg(h.stack.orm);
    const domain = await addSendingDomain(h.stack.orm, org.id);
    const em = scopeToOrg(h.stack.orm.em.fork(), org.id);
    em.create(Broadcast, {
      orgId: org.id,
      name: 'Launch',
      subject: 'Hello',
      fromName: 'Acme',
      fromEmail: `news@${domain.domain}`,
      replyTo: null,
      status: 'sending',
      domainId: domain.id,
    } as never);
    await em.flush();
    const owner = await signIn(org.id, 'owner');
    const confirm = await owner.get(`/dashboard/domains/${domain.id}/delete`);
    expect(confirm.text).toContain('1 broadcast scheduled or sending');
    expect(confirm.text).toMatch(/<button type="submit" class="danger large" disabled>/);
    const refused = await owner.post(`/dashboard/domains/${domain.id}/delete`, {
      _csrf: /name="_csrf" value="([^"]+)"/.exec(confirm.text)![1]!,
    });
    expect(refused.status).toBe(409);
    expect(refused.text).toContain('still has mail on its way');
    expect(await domainRow(domain.id)).not.toBeNull();
  });

  it("answers 404 for another workspace's domain and sender, and changes nothing", async () => {
    const { org: other } = await createOrg(h.stack.orm);
    const foreign = await addSendingDomain(h.stack.orm, other.id);
    const sender = await h.stack.orm.em.fork().transactional((em) => {
      const row = em.create(SenderIdentity, {
        orgId: other.id,
        domainId: foreign.id,
        email: `x@${foreign.domain}`,
        name: 'X',
        isDefault: true,
      });
      return Promise.resolve(row);
    });
    const { org } = await createOrg(h.stack.orm);
    const own = await addSendingDomain(h.stack.orm, org.id);
    const owner = await signIn(org.id, 'owner');
    expect((await owner.get(`/dashboard/domains/${foreign.id}/delete`)).status).toBe(404);
    for (const action of [
      `/dashboard/domains/${foreign.id}/delete`,
      `/dashboard/domains/${foreign.id}/senders`,
      `/dashboard/domains/${own.id}/senders/${sender.id}/remove`,
    ]) {
      const posted = await owner.submit(`/dashboard/domains/${own.id}`, action, { name: 'Taken', email: `taken@${foreign.domain}` });
      expect(posted.status, action).toBe(404);
    }
    expect(await domainRow(foreign.id)).not.toBeNull();
    expect(await sendersOf(foreign.id)).toHaveLength(1);
  });
});
