import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DashboardInvite, User, type UserRole } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';
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

    expect((await owner.client.submit('/dashboard/people', '/dashboard/people', { email: 'not an address', role: 'member' })).status).toBe(
      400,
    );
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

  it("lets an owner remove a person's access: signed out everywhere, their password gone; not their own, not another workspace's", async () => {
    const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner' });
    const leaver = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), name: 'Leaving Person' });
    const leaverId = (await h.stack.orm.em.fork().findOneOrFail(User, { email: leaver.email }, ALL_TENANTS)).id;
    const page = await owner.client.get('/dashboard/people');
    const removed = await owner.client.post(`/dashboard/people/${leaverId}/revoke`, { _csrf: csrfOf(page.text) });
    expect(removed.status).toBe(200);
    expect(removed.text).toContain('Leaving Person no longer has access');
    expect((await leaver.client.get('/dashboard/keys')).status).toBe(303);
    const signIn = await dashboardClient(h.api.url).submit('/dashboard/sign-in', '/dashboard/sign-in', {
      email: leaver.email,
      password: leaver.password,
    });
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

  describe('invitations never take over an account', () => {
    const userOf = (address: string) => h.stack.orm.em.fork().findOneOrFail(User, { email: address }, ALL_TENANTS);
    const openInvites = (address: string) =>
      h.stack.orm.em.fork().count(DashboardInvite, { email: address, acceptedAt: null, expiresAt: { $gt: new Date() } }, ALL_TENANTS);
    const signIn = (address: string, password: string) =>
      dashboardClient(h.api.url).submit('/dashboard/sign-in', '/dashboard/sign-in', { email: address, password });
    /** Posts an acceptance to `path` with a valid pre-session form token (from the sign-in page), as a browser that kept the page open would. */
    async function acceptWithValidForm(path: string) {
      const browser = dashboardClient(h.api.url);
      const form = await browser.get('/dashboard/sign-in');
      return browser.post(path, { _csrf: csrfOf(form.text), name: 'Too Late', password: 'a long passphrase here' });
    }
    /** An open invitation row as one created before invitations checked the address (still open after an upgrade). */
    async function earlierInvite(orgId: string, address: string, role: UserRole): Promise<string> {
      const token = randomBytes(32).toString('base64url');
      const em = h.stack.orm.em.fork();
      em.create(DashboardInvite, {
        orgId,
        email: address,
        role,
        kind: 'invite',
        tokenHash: createHash('sha256').update(token).digest('hex'),
        expiresAt: new Date(Date.now() + 86_400_000),
        acceptedAt: null,
      });
      await em.flush();
      return token;
    }

    it("refuses to invite an address that already has access (409, nothing created), from the dashboard and the operator's service alike", async () => {
      const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner' });
      const member = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, {
        email: email(),
        role: 'member',
        name: 'Mia Member',
      });
      const promote = await owner.client.submit('/dashboard/people', '/dashboard/people', { email: member.email, role: 'owner' });
      expect(promote.status, promote.text).toBe(409);
      expect(decodeEntities(promote.text)).toContain(`${member.email} already has access to this workspace`);
      expect(promote.text).not.toContain('invite-link');
      const demote = await owner.client.submit('/dashboard/people', '/dashboard/people', {
        email: owner.email.toUpperCase(),
        role: 'member',
      });
      expect(demote.status).toBe(409);
      await expect(
        createDashboardAuthService({ orm: h.stack.orm }).invite({ orgId: h.workspace.org.id, email: member.email, role: 'member' }),
      ).rejects.toMatchObject({ code: 'conflict' });
      expect(await openInvites(member.email)).toBe(0);
      expect(await openInvites(owner.email)).toBe(0);
      expect(await userOf(member.email)).toMatchObject({ role: 'member', name: 'Mia Member' });
      expect(await userOf(owner.email)).toMatchObject({ role: 'owner' });
      expect((await signIn(member.email, member.password)).status).toBe(303);
      expect((await member.client.get('/dashboard/keys')).status).toBe(200);
    });

    it('accepting an invitation opened before the person had access changes nothing: 409, password, role and sessions kept, the link used up', async () => {
      const person = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, {
        email: email(),
        role: 'member',
        name: 'Kept Name',
      });
      const token = await earlierInvite(h.workspace.org.id, person.email, 'owner');
      const stranger = dashboardClient(h.api.url);
      const accepted = await stranger.submit(`/dashboard/invite/${token}`, `/dashboard/invite/${token}`, {
        name: 'Taken Over',
        password: 'a brand new passphrase',
      });
      expect(accepted.status, accepted.text).toBe(409);
      expect(accepted.text).toContain('already has access');
      expect(stranger.jar.has('herald_session')).toBe(false);
      expect(await userOf(person.email)).toMatchObject({ role: 'member', name: 'Kept Name' });
      expect((await signIn(person.email, 'a brand new passphrase')).status).toBe(401);
      expect((await signIn(person.email, person.password)).status).toBe(303);
      expect((await person.client.get('/dashboard/keys')).status).toBe(200);
      expect((await dashboardClient(h.api.url).get(`/dashboard/invite/${token}`)).status).toBe(404);
    });

    it('lists open invitations to everyone; an owner cancels one through a CSRF-protected form and its link stops working', async () => {
      const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner' });
      const member = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'member' });
      const invited = email();
      const created = await owner.client.submit('/dashboard/people', '/dashboard/people', { email: invited, role: 'member' });
      const link = new URL(decodeEntities(/<code id="invite-link">([^<]+)<\/code>/.exec(created.text)?.[1] ?? '')).pathname;
      const page = await owner.client.get('/dashboard/people');
      const inviteId = (await h.stack.orm.em.fork().findOneOrFail(DashboardInvite, { email: invited }, ALL_TENANTS)).id;
      expect(page.text).toContain(`action="/dashboard/people/invitations/${inviteId}/cancel"`);
      expect(page.text).toMatch(new RegExp(`${invited.replace(/[.]/g, '\\.')} \\(member\\)`));

      const seen = await member.client.get('/dashboard/people');
      expect(seen.text).toContain(invited);
      expect(seen.text).not.toContain('Cancel invitation');
      expect((await member.client.post(`/dashboard/people/invitations/${inviteId}/cancel`, { _csrf: csrfOf(seen.text) })).status).toBe(403);
      expect((await owner.client.post(`/dashboard/people/invitations/${inviteId}/cancel`, {})).status).toBe(403);
      expect((await owner.client.post(`/dashboard/people/invitations/${inviteId}/cancel`, { _csrf: 'x'.repeat(43) })).status).toBe(403);
      expect(await openInvites(invited)).toBe(1);

      const cancelled = await owner.client.post(`/dashboard/people/invitations/${inviteId}/cancel`, { _csrf: csrfOf(page.text) });
      expect(cancelled.status, cancelled.text).toBe(200);
      expect(decodeEntities(cancelled.text)).toContain(`The invitation for ${invited} is cancelled`);
      expect(cancelled.text).not.toContain(`/dashboard/people/invitations/${inviteId}/cancel`);
      expect(await openInvites(invited)).toBe(0);
      expect((await dashboardClient(h.api.url).get(link)).status).toBe(404);
      expect((await acceptWithValidForm(link)).status).toBe(404);
      expect((await owner.client.post(`/dashboard/people/invitations/${inviteId}/cancel`, { _csrf: csrfOf(page.text) })).status).toBe(404);

      // Another workspace's invitation: not found, still open.
      const { org } = await createOrg(h.stack.orm);
      const foreign = await createDashboardAuthService({ orm: h.stack.orm }).invite({ orgId: org.id, email: email(), role: 'member' });
      expect(
        (await owner.client.post(`/dashboard/people/invitations/${foreign.invite.id}/cancel`, { _csrf: csrfOf(page.text) })).status,
      ).toBe(404);
      expect(await openInvites(foreign.invite.email)).toBe(1);
    });

    it('removing a person cancels their open invitations and sign-in links', async () => {
      const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner' });
      const leaver = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
      const invitation = await earlierInvite(h.workspace.org.id, leaver.email, 'member');
      const signInLink = await createDashboardAuthService({ orm: h.stack.orm }).signInLink({
        orgId: h.workspace.org.id,
        email: leaver.email,
      });
      const leaverId = (await userOf(leaver.email)).id;
      const page = await owner.client.get('/dashboard/people');
      expect((await owner.client.post(`/dashboard/people/${leaverId}/revoke`, { _csrf: csrfOf(page.text) })).status).toBe(200);
      expect(await openInvites(leaver.email)).toBe(0);
      expect((await dashboardClient(h.api.url).get(`/dashboard/invite/${invitation}`)).status).toBe(404);
      expect((await acceptWithValidForm(`/dashboard/invite/${invitation}`)).status).toBe(404);
      expect((await dashboardClient(h.api.url).get(`/dashboard/sign-in/${signInLink.token}`)).status).toBe(404);
      expect((await userOf(leaver.email)).passwordHash).toBeNull();
    });

    it("accepting an invitation ends the account's other sessions; an owner stays an owner", async () => {
      // A workspace's first owner has no password; an operator's link signed them in somewhere.
      const { org, owner } = await createOrg(h.stack.orm);
      const auth = createDashboardAuthService({ orm: h.stack.orm });
      const { token: signInToken } = await auth.signInLink({ orgId: org.id });
      const elsewhere = dashboardClient(h.api.url);
      expect((await elsewhere.submit(`/dashboard/sign-in/${signInToken}`, `/dashboard/sign-in/${signInToken}`, {})).status).toBe(303);
      expect((await elsewhere.get('/dashboard/keys')).status).toBe(200);

      // Demoting them by invitation is refused, from the dashboard too, and changes nothing.
      await expect(auth.invite({ orgId: org.id, email: owner.email, role: 'member' })).rejects.toThrow(
        /is an owner; an invitation cannot change their role/,
      );
      const colleague = await signedInPerson(h.stack.orm, h.api.url, org.id, { email: email(), role: 'owner' });
      const demote = await colleague.client.submit('/dashboard/people', '/dashboard/people', { email: owner.email, role: 'member' });
      expect(demote.status).toBe(409);
      expect(await openInvites(owner.email)).toBe(0);
      // An invitation as member opened before that check: accepted, the role stays owner.
      const earlier = await earlierInvite(org.id, owner.email, 'member');
      const here = dashboardClient(h.api.url);
      expect(
        (
          await here.submit(`/dashboard/invite/${earlier}`, `/dashboard/invite/${earlier}`, {
            name: 'First Owner',
            password: 'the first owner passphrase',
          })
        ).status,
      ).toBe(303);
      expect(await userOf(owner.email)).toMatchObject({ role: 'owner', name: 'First Owner' });
      expect((await here.get('/dashboard/people')).text).toContain('Invite someone');
      expect((await elsewhere.get('/dashboard/keys')).status).toBe(303);
      expect((await colleague.client.get('/dashboard/keys')).status).toBe(200);

      // Invited as owner (the usual way a first owner chooses a password): the same, other sessions end.
      const { org: second, owner: secondOwner } = await createOrg(h.stack.orm);
      const link = await auth.signInLink({ orgId: second.id });
      const old = dashboardClient(h.api.url);
      expect((await old.submit(`/dashboard/sign-in/${link.token}`, `/dashboard/sign-in/${link.token}`, {})).status).toBe(303);
      const { token } = await auth.invite({ orgId: second.id, email: secondOwner.email, role: 'owner' });
      const fresh = dashboardClient(h.api.url);
      expect(
        (
          await fresh.submit(`/dashboard/invite/${token}`, `/dashboard/invite/${token}`, {
            name: 'Second Owner',
            password: 'another long passphrase',
          })
        ).status,
      ).toBe(303);
      expect((await old.get('/dashboard/keys')).status).toBe(303);
      expect((await fresh.get('/dashboard/keys')).status).toBe(200);
    });
  });
});
