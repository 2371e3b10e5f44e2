import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey, DashboardInvite, DashboardSession, User } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { createDashboardAuthService } from '../../src/modules/dashboard/dashboard-auth.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';

describe('the dashboard: sign-in, sessions, CSRF, tenancy and API keys', () => {
  let h: ApiHarness;
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const keysOf = (orgId: string) => h.stack.orm.em.fork().find(ApiKey, { orgId }, ALL_TENANTS);

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h.close();
  });

  it('answers no page without a session: every page redirects to sign-in, every form is refused and changes nothing', async () => {
    const client = dashboardClient(h.api.url);
    for (const path of ['/dashboard', '/dashboard/keys']) {
      const page = await client.get(path);
      expect(page.status, path).toBeGreaterThanOrEqual(300);
      expect(page.status, path).toBeLessThan(400);
    }
    expect((await client.get('/dashboard/keys')).headers.get('location')).toBe('/dashboard/sign-in');
    const before = (await keysOf(h.workspace.org.id)).length;
    const posted = await client.post('/dashboard/keys', { name: 'sneaky', mode: 'test', scopes: 'me:read', _csrf: 'x' });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toBe('/dashboard/sign-in');
    expect(await keysOf(h.workspace.org.id)).toHaveLength(before);
    expect((await client.post(`/dashboard/keys/${h.workspace.apiKey.id}/revoke`, { _csrf: 'x' })).status).toBe(303);
    expect((await keysOf(h.workspace.org.id)).find((k) => k.id === h.workspace.apiKey.id)?.revokedAt).toBeNull();
    expect((await client.get('/dashboard/sign-in')).status).toBe(200);
  });

  it('accepts an invitation once: the person chooses a password and is signed in with a safe cookie', async () => {
    const address = email();
    const { token } = await createDashboardAuthService({ orm: h.stack.orm }).invite({
      orgId: h.workspace.org.id,
      email: address,
      role: 'member',
    });
    const client = dashboardClient(h.api.url);
    const page = await client.get(`/dashboard/invite/${token}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(address);
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(page.headers.get('x-frame-options')).toBe('DENY');

    // Too short a password: refused with the reason, the invitation still open, no user.
    const short = await client.post(`/dashboard/invite/${token}`, { _csrf: csrfOf(page.text), name: 'Ada', password: 'x'.repeat(11) });
    expect(short.status).toBe(400);
    expect(short.text).toContain('12 to 200 characters');
    expect(await h.stack.orm.em.fork().findOne(User, { email: address }, ALL_TENANTS)).toBeNull();

    const accepted = await client.post(`/dashboard/invite/${token}`, { _csrf: csrfOf(page.text), name: 'Ada', password: 'x'.repeat(12) });
    expect(accepted.status).toBe(303);
    const cookie = accepted.headers.getSetCookie().find((line) => line.startsWith('herald_session='));
    expect(cookie).toMatch(/; path=\/dashboard/i);
    expect(cookie).toMatch(/; httponly/i);
    expect(cookie).toMatch(/; samesite=lax/i);
    expect(cookie).not.toMatch(/; secure/i); // plain HTTP here; Secure only through a trusted proxy saying https (test/http/edge-security.test.ts)
    const keys = await client.get('/dashboard/keys');
    expect(keys.status).toBe(200);
    expect(keys.text).toContain('Ada');
    // The cookie holds a token; the database only its hash.
    const token64 = client.jar.get('herald_session')!;
    expect(await h.stack.orm.em.fork().count(DashboardSession, { tokenHash: token64 }, ALL_TENANTS)).toBe(0);

    // Used: the link is dead.
    expect((await dashboardClient(h.api.url).get(`/dashboard/invite/${token}`)).status).toBe(404);
  });

  it('does not take an expired invitation', async () => {
    const { token, invite } = await createDashboardAuthService({ orm: h.stack.orm }).invite(
      { orgId: h.workspace.org.id, email: email(), role: 'member' },
      new Date(Date.now() - 8 * 86_400_000),
    );
    expect(invite.expiresAt.getTime()).toBeLessThan(Date.now());
    expect((await dashboardClient(h.api.url).get(`/dashboard/invite/${token}`)).status).toBe(404);
    expect(await h.stack.orm.em.fork().count(DashboardInvite, { id: invite.id, acceptedAt: null }, ALL_TENANTS)).toBe(1);
  });

  it('signs in with the password (a wrong one is refused), always with a new session token', async () => {
    const person = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const client = dashboardClient(h.api.url);
    const wrong = await client.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: person.email, password: 'not the password!' });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Wrong email or password.');
    const unknown = await client.submit('/dashboard/sign-in', '/dashboard/sign-in', {
      email: 'nobody@example.com',
      password: 'not the password!',
    });
    expect(unknown.status).toBe(401);
    expect(unknown.text).toContain('Wrong email or password.');

    // Session fixation: a token planted before sign-in is replaced, and never becomes a session.
    client.jar.set('herald_session', 'planted-by-an-attacker');
    const signedIn = await client.submit('/dashboard/sign-in', '/dashboard/sign-in', {
      email: person.email.toUpperCase(),
      password: person.password,
    });
    expect(signedIn.status).toBe(303);
    expect(signedIn.headers.get('location')).toBe('/dashboard/keys');
    expect(client.jar.get('herald_session')).not.toBe('planted-by-an-attacker');
    expect((await client.get('/dashboard/keys')).status).toBe(200);
    const planted = dashboardClient(h.api.url);
    planted.jar.set('herald_session', 'planted-by-an-attacker');
    expect((await planted.get('/dashboard/keys')).status).toBe(303);
  });

  it('refuses a sign-in form without its CSRF token or from another origin', async () => {
    const person = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const client = dashboardClient(h.api.url);
    await client.get('/dashboard/sign-in');
    expect((await client.post('/dashboard/sign-in', { email: person.email, password: person.password })).status).toBe(403);
    expect((await client.post('/dashboard/sign-in', { _csrf: 'forged', email: person.email, password: person.password })).status).toBe(403);
    const cross = await client.submit(
      '/dashboard/sign-in',
      '/dashboard/sign-in',
      { email: person.email, password: person.password },
      { origin: 'https://evil.example' },
    );
    expect(cross.status).toBe(403);
    expect(client.jar.has('herald_session')).toBe(false);
  });

  it('limits sign-in attempts: 10 a minute per email, then 429 with Retry-After', async () => {
    const person = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const statuses: number[] = [];
    for (let i = 0; i < 11; i += 1) {
      // A fresh client each time: the limit is not a cookie's.
      const attempt = await dashboardClient(h.api.url).submit('/dashboard/sign-in', '/dashboard/sign-in', {
        email: person.email,
        password: `wrong password ${i}`,
      });
      statuses.push(attempt.status);
      if (attempt.status === 429) expect(Number(attempt.headers.get('retry-after'))).toBeGreaterThan(0);
    }
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses[10]).toBe(429);
    // Even the right password waits.
    expect(
      (
        await dashboardClient(h.api.url).submit('/dashboard/sign-in', '/dashboard/sign-in', {
          email: person.email,
          password: person.password,
        })
      ).status,
    ).toBe(429);
  });

  it("needs the session's CSRF token and this origin on every form", async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const before = (await keysOf(h.workspace.org.id)).length;
    const fields = { name: 'csrf test', mode: 'test', scopes: 'me:read' };
    expect((await client.post('/dashboard/keys', fields)).status).toBe(403);
    expect((await client.post('/dashboard/keys', { ...fields, _csrf: 'forged' })).status).toBe(403);
    expect((await client.submit('/dashboard/keys', '/dashboard/keys', fields, { origin: 'https://evil.example' })).status).toBe(403);
    // Another person's token is not this session's.
    const other = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const othersToken = csrfOf((await other.client.get('/dashboard/keys')).text);
    expect((await client.post('/dashboard/keys', { ...fields, _csrf: othersToken })).status).toBe(403);
    expect(await keysOf(h.workspace.org.id)).toHaveLength(before);
  });

  it('creates a key whose secret is shown once and works with the API; members make test keys only', async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'member' });
    const created = await client.submit('/dashboard/keys', '/dashboard/keys', {
      name: 'Reporting',
      mode: 'test',
      scopes: ['me:read', 'domains:read'],
    });
    expect(created.status).toBe(201);
    const secret = /<code id="new-key">([^<]+)<\/code>/.exec(created.text)?.[1];
    expect(secret).toMatch(/^hrld_test_/);
    const me = await apiClient(h.api.url, secret)('GET', '/api/v1/me');
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ org_id: h.workspace.org.id, scopes: ['me:read', 'domains:read'] });
    // The list shows the key without its secret.
    const list = await client.get('/dashboard/keys');
    expect(list.text).toContain('Reporting');
    expect(list.text).not.toContain(secret!);

    const live = await client.submit('/dashboard/keys', '/dashboard/keys', { name: 'Live one', mode: 'live', scopes: 'me:read' });
    expect(live.status).toBe(403);
    expect(live.text).toContain('Only an owner can create live keys.');
    const none = await client.submit('/dashboard/keys', '/dashboard/keys', { name: 'No scopes', mode: 'test' });
    expect(none.status).toBe(400);
    expect(none.text).toContain('Choose at least one scope.');
    const gated = await client.submit('/dashboard/keys', '/dashboard/keys', {
      name: 'Gated',
      mode: 'test',
      scopes: 'assistant.sessions:write',
    });
    expect(gated.status).toBe(400);
    // Names as the API takes them: 200 characters at most.
    expect(
      (await client.submit('/dashboard/keys', '/dashboard/keys', { name: 'n'.repeat(200), mode: 'test', scopes: 'me:read' })).status,
    ).toBe(201);
    const long = await client.submit('/dashboard/keys', '/dashboard/keys', { name: 'n'.repeat(201), mode: 'test', scopes: 'me:read' });
    expect(long.status).toBe(400);
    expect(long.text).toContain('1 to 200 characters');

    const owner = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email(), role: 'owner' });
    const ownersLive = await owner.client.submit('/dashboard/keys', '/dashboard/keys', {
      name: 'Production',
      mode: 'live',
      scopes: 'me:read',
    });
    expect(ownersLive.status).toBe(201);
    expect(/<code id="new-key">([^<]+)<\/code>/.exec(ownersLive.text)?.[1]).toMatch(/^hrld_live_/);
  });

  it('does a form sent twice (a double click, a reload after POST) once', async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const page = await client.get('/dashboard/keys');
    const fields = {
      _csrf: csrfOf(page.text),
      _once: /name="_once" value="([^"]+)"/.exec(page.text)![1]!,
      name: 'Clicked twice',
      mode: 'test',
      scopes: 'me:read',
    };
    const first = await client.post('/dashboard/keys', fields);
    const second = await client.post('/dashboard/keys', fields);
    expect(first.status).toBe(201);
    expect(second.status).toBe(409);
    expect(second.text).toContain('This form was already sent');
    expect((await keysOf(h.workspace.org.id)).filter((k) => k.name === 'Clicked twice')).toHaveLength(1);
    // Every render gives its forms a new value: the next form is its own.
    expect(
      (await client.submit('/dashboard/keys', '/dashboard/keys', { name: 'Clicked twice', mode: 'test', scopes: 'me:read' })).status,
    ).toBe(201);
  });

  it('renders names as text, never markup', async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, {
      email: email(),
      name: '<img src=x onerror=alert(1)>',
    });
    await client.submit('/dashboard/keys', '/dashboard/keys', { name: '<script>alert("key")</script>', mode: 'test', scopes: 'me:read' });
    const page = await client.get('/dashboard/keys');
    expect(page.text).not.toContain('<script>alert');
    expect(page.text).not.toContain('<img src=x');
    expect(page.text).toMatch(/&(#60|lt);script&(#62|gt);alert/);
  });

  it("keeps workspaces apart: another workspace's keys are not listed and cannot be revoked (404)", async () => {
    const { org: other } = await createOrg(h.stack.orm);
    const foreign = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
      orgId: other.id,
      scopes: ['me:read'],
      name: 'Foreign key name',
    });
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const page = await client.get('/dashboard/keys');
    expect(page.text).not.toContain('Foreign key name');
    const revoke = await client.submit('/dashboard/keys', `/dashboard/keys/${foreign.apiKey.id}/revoke`, {});
    expect(revoke.status).toBe(404);
    expect((await h.stack.orm.em.fork().findOne(ApiKey, { id: foreign.apiKey.id }, ALL_TENANTS))?.revokedAt).toBeNull();
  });

  it('revokes a key of the workspace', async () => {
    const { client } = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const created = await client.submit('/dashboard/keys', '/dashboard/keys', { name: 'Short-lived', mode: 'test', scopes: 'me:read' });
    const id = (await keysOf(h.workspace.org.id)).find((k) => k.name === 'Short-lived')!.id;
    expect(created.status).toBe(201);
    const revoked = await client.submit('/dashboard/keys', `/dashboard/keys/${id}/revoke`, {});
    expect(revoked.status).toBe(303);
    expect((await h.stack.orm.em.fork().findOne(ApiKey, { id }, ALL_TENANTS))?.revokedAt).not.toBeNull();
    expect((await client.get('/dashboard/keys')).text).toMatch(/Short-lived[\s\S]*revoked/);
  });

  it("signs in once through an operator's sign-in link (a GET alone signs nobody in); invitations and sign-in links do not mix", async () => {
    const auth = createDashboardAuthService({ orm: h.stack.orm });
    const person = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const { token } = await auth.signInLink({ orgId: h.workspace.org.id, email: person.email });
    const client = dashboardClient(h.api.url);
    const page = await client.get(`/dashboard/sign-in/${token}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain(person.email);
    expect(client.jar.has('herald_session')).toBe(false);
    expect((await client.post(`/dashboard/sign-in/${token}`, { _csrf: csrfOf(page.text) })).status).toBe(303);
    expect((await client.get('/dashboard/keys')).status).toBe(200);
    expect((await dashboardClient(h.api.url).get(`/dashboard/sign-in/${token}`)).status).toBe(404);

    const expired = await auth.signInLink({ orgId: h.workspace.org.id, email: person.email }, new Date(Date.now() - 16 * 60_000));
    expect((await dashboardClient(h.api.url).get(`/dashboard/sign-in/${expired.token}`)).status).toBe(404);
    const invitation = await auth.invite({ orgId: h.workspace.org.id, email: email(), role: 'owner' });
    expect((await dashboardClient(h.api.url).get(`/dashboard/sign-in/${invitation.token}`)).status).toBe(404);
    const link = await auth.signInLink({ orgId: h.workspace.org.id, email: person.email });
    expect((await dashboardClient(h.api.url).get(`/dashboard/invite/${link.token}`)).status).toBe(404);
    await expect(auth.signInLink({ orgId: h.workspace.org.id, email: 'nobody@example.com' })).rejects.toThrow(/no such person/);

    // The workspace's first owner has no password (the dev stack's case): the link's session holds.
    const { org } = await createOrg(h.stack.orm);
    const ownerLink = await auth.signInLink({ orgId: org.id });
    const owner = dashboardClient(h.api.url);
    expect((await owner.submit(`/dashboard/sign-in/${ownerLink.token}`, `/dashboard/sign-in/${ownerLink.token}`, {})).status).toBe(303);
    const keys = await owner.get('/dashboard/keys');
    expect(keys.status).toBe(200);
    expect(keys.text).toContain(org.name);
  });

  it('signs out one browser, or every browser of the person at once', async () => {
    const person = await signedInPerson(h.stack.orm, h.api.url, h.workspace.org.id, { email: email() });
    const second = dashboardClient(h.api.url);
    expect(
      (await second.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: person.email, password: person.password })).status,
    ).toBe(303);
    const third = dashboardClient(h.api.url);
    expect(
      (await third.submit('/dashboard/sign-in', '/dashboard/sign-in', { email: person.email, password: person.password })).status,
    ).toBe(303);

    expect((await third.submit('/dashboard/keys', '/dashboard/sign-out', {})).status).toBe(303);
    expect((await third.get('/dashboard/keys')).status).toBe(303);
    expect((await second.get('/dashboard/keys')).status).toBe(200);

    expect((await person.client.submit('/dashboard/keys', '/dashboard/sign-out-everywhere', {})).status).toBe(303);
    expect((await person.client.get('/dashboard/keys')).status).toBe(303);
    expect((await second.get('/dashboard/keys')).status).toBe(303);
  });
});
