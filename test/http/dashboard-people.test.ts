import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { User } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';

describe('dashboard people: who has access, invitations and removal by owners', () => {
  let h: ApiHarness;
  const email = () => `${unique('p').toLowerCase()}@example.com`;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it('needs a session', async () => {
    expect((await dashboardClient(h.api.url).get('/dashboard/people')).status).toBe(303);
    expect((await dashboardClient(h.api.url).post('/dashboard/people', { email: email(), role: 'owner', _csrf: 'x' })).status).toBe(303);
  });

  it('lets an owner invite someone through a link shown once, which the person uses to join', async () => {
    const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner', name: 'Olive Owner' });
    const invited = email();
    const page = await owner.client.submit('/dashboard/people', '/dashboard/people', { email: invited.toUpperCase(), role: 'member' });
    expect(page.status).toBe(201);
    const link = decodeEntities(/<code id="invite-link">([^<]+)<\/code>/.exec(page.text)?.[1] ?? '');
    expect(link).toMatch(/\/dashboard\/invite\/[\w-]{43}$/);
    expect(page.text).toContain(invited);

    const newcomer = dashboardClient(h.api.url);
    const path = new URL(link).pathname;
    expect((await newcomer.submit(path, path, { name: 'New Member', password: 'a long passphrase here' })).status).toBe(303);
    const list = await newcomer.get('/dashboard/people');
    expect(list.status).toBe(200);
    expect(list.text).toContain('New Member');
    expect(list.text).toContain('Only an owner can invite or remove people.');
    expect(list.text).not.toContain('Remove access');

    expect((await owner.client.submit('/dashboard/people', '/dashboard/people', { email: 'not an address', role: 'member' })).status).toBe(400);
    expect((await owner.client.submit('/dashboard/people', '/dashboard/people', { email: email(), role: 'admin' })).status).toBe(400);
  });

  it('refuses invitations and removals from members', async () => {
    const member = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'member' });
    const victim = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'member' });
    const victimId = (await h.stack.orm.em.fork().findOneOrFail(User, { email: victim.email }, ALL_TENANTS)).id;
    expect((await member.client.submit('/dashboard/people', '/dashboard/people', { email: email(), role: 'owner' })).status).toBe(403);
    expect((await member.client.submit('/dashboard/people', `/dashboard/people/${victimId}/revoke`, {})).status).toBe(403);
    expect((await victim.client.get('/dashboard/keys')).status).toBe(200);
  });

  it('lets an owner remove a person\'s access: signed out everywhere, their password gone; not their own, not another workspace\'s', async () => {
    const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner' });
    const leaver = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), name: 'Leaving Person' });
    const leaverId = (await h.stack.orm.em.fork().findOneOrFail(User, { email: leaver.email }, ALL_TENANTS)).id;
    const page = await owner.client.get('/dashboard/people');
    const removed = await owner.client.post(`/dashboard/people/${leaverId}/revoke`, { _csrf: csrfOf(page.text) });
    expect(removed.status).toBe(200);
    expect(removed.text).toContain('Leaving Person no longer has access');
    expect((await leaver.client.get('/dashboard/keys')).status).toBe(303);
    const signIn = await dashboardClient(h.api.url).submit('/dashboard/sign-in', '/dashboard/sign-in', { email: leaver.email, password: leaver.password });
    expect(signIn.status).toBe(401);

    const ownerId = (await h.stack.orm.em.fork().findOneOrFail(User, { email: owner.email }, ALL_TENANTS)).id;
    expect((await owner.client.post(`/dashboard/people/${ownerId}/revoke`, { _csrf: csrfOf(page.text) })).status).toBe(409);
    const { owner: foreign } = await createOrg(h.stack.orm);
    expect((await owner.client.post(`/dashboard/people/${foreign.id}/revoke`, { _csrf: csrfOf(page.text) })).status).toBe(404);
    // Without the form's token: refused, nothing changes.
    const other = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const otherId = (await h.stack.orm.em.fork().findOneOrFail(User, { email: other.email }, ALL_TENANTS)).id;
    expect((await owner.client.post(`/dashboard/people/${otherId}/revoke`, {})).status).toBe(403);
    expect((await other.client.get('/dashboard/keys')).status).toBe(200);
  });
});
