import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey } from '../../db/entities/index.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';

type Key = {
  _id: string;
  name: string;
  prefix: string;
  mode: string;
  scopes: string[];
  secret?: string;
  expires_at: string | null;
  revoked_at: string | null;
  parent_key_id: string | null;
};
type Profile = { requests_per_minute: number; burst: number; source: string };
const reasonOf = (response: { body: { error?: { details?: unknown } } }) =>
  (response.body.error?.details as { reason?: string } | undefined)?.reason;

/** GET/POST /api-keys and DELETE /api-keys/{id}: metadata only, the secret once, scopes bounded by the caller, expiry and revocation honoured. */
describe('API keys of a workspace', () => {
  let h: ApiHarness;
  const create = (body: Record<string, unknown>, headers = idem()) => h.request('POST', '/api/v1/api-keys', { headers, body });
  const me = (key: string) => apiClient(h.api.url, key)('GET', '/api/v1/me');

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => h?.close());

  it('creates a key whose secret is shown once and works, and lists keys without secrets', async () => {
    const created = await create({ name: 'CI sender', scopes: ['outbox.transactional:send', 'me:read'] });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const key = created.body.data as Key;
    expect(key).toMatchObject({ name: 'CI sender', scopes: ['outbox.transactional:send', 'me:read'], expires_at: null, revoked_at: null });
    expect(key.secret).toMatch(/^hrld_(live|test)_/);
    expect(key.secret!.startsWith(`hrld_${key.mode}_`)).toBe(true);
    expect((await me(key.secret!)).status).toBe(200);
    const listed = (await h.request('GET', '/api/v1/api-keys?limit=100')).body.data as Key[];
    const shown = listed.find((k) => k._id === key._id)!;
    expect(shown).toMatchObject({ name: 'CI sender', prefix: key.prefix });
    expect(JSON.stringify(listed)).not.toContain(key.secret!);
    expect(Object.keys(shown)).not.toContain('secret');
  });

  it('replays the creation for the same Idempotency-Key with the same secret, and makes no second key', async () => {
    const headers = idem();
    const first = await create({ name: 'Once', scopes: ['me:read'] }, headers);
    const count = await h.stack.orm.em.fork().count(ApiKey, { orgId: h.workspace.org.id, name: 'Once' }, { filters: false });
    const again = await create({ name: 'Once', scopes: ['me:read'] }, headers);
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect((again.body.data as Key).secret).toBe((first.body.data as Key).secret);
    expect(await h.stack.orm.em.fork().count(ApiKey, { orgId: h.workspace.org.id, name: 'Once' }, { filters: false })).toBe(count);
  });

  it('grants only scopes the calling key holds, never gated ones, and no live key from a test key', async () => {
    const narrow = await createOrgWithKey(h.stack.orm, { scopes: ['api_keys:write', 'me:read'] });
    const asNarrow = apiClient(h.api.url, narrow.key);
    const refused = await asNarrow('POST', '/api/v1/api-keys', { headers: idem(), body: { name: 'More', scopes: ['contacts:write'] } });
    expectError(refused, 403, 'forbidden');
    expect(reasonOf(refused)).toBe('SCOPE_NOT_HELD');
    expect((await asNarrow('POST', '/api/v1/api-keys', { headers: idem(), body: { name: 'Same', scopes: ['me:read'] } })).status).toBe(201);
    expectError(await create({ name: 'Gated', scopes: ['assistant.chat:write'] }), 400, 'invalid_request');
    expectError(await create({ name: 'Unknown', scopes: ['nope:read'] }), 400, 'invalid_request');
    const testKey = await createOrgWithKey(h.stack.orm, { scopes: ['all'], mode: 'test' });
    const live = await apiClient(h.api.url, testKey.key)('POST', '/api/v1/api-keys', {
      headers: idem(),
      body: { name: 'Live', scopes: ['me:read'], mode: 'live' },
    });
    expectError(live, 403, 'forbidden');
    expect(reasonOf(live)).toBe('MODE_NOT_HELD');
  });

  it('takes an expiry from a minute to three years ahead, and refuses the key once it has expired', async () => {
    const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
    expectError(await create({ name: 'Too soon', scopes: ['me:read'], expires_at: ahead(30_000) }), 400, 'invalid_request');
    expectError(
      await create({ name: 'Too far', scopes: ['me:read'], expires_at: ahead(3 * 365 * 86_400_000 + 86_400_000) }),
      400,
      'invalid_request',
    );
    expect((await create({ name: 'Far', scopes: ['me:read'], expires_at: ahead(3 * 365 * 86_400_000 - 86_400_000) })).status).toBe(201);
    const soon = (await create({ name: 'Soon', scopes: ['me:read'], expires_at: ahead(120_000) })).body.data as Key;
    // Time passes: the key's expiry is now behind us (its lookup is not cached yet).
    await h.stack.orm.em.fork().nativeUpdate(ApiKey, { id: soon._id }, { expiresAt: new Date(Date.now() - 1000) }, { filters: false });
    expectError(await me(soon.secret!), 401, 'invalid_api_key');
  });

  it('revokes a key: refused within the 5 s key cache, listed as revoked; another workspace gets 404', async () => {
    const key = (await create({ name: 'To revoke', scopes: ['me:read'] })).body.data as Key;
    expect((await me(key.secret!)).status).toBe(200);
    const revoked = await h.request('DELETE', `/api/v1/api-keys/${key._id}`, { headers: idem() });
    expect(revoked.status).toBe(200);
    expect((revoked.body.data as Key).revoked_at).not.toBeNull();
    const started = Date.now();
    while ((await me(key.secret!)).status === 200 && Date.now() - started < 10_000)
      await new Promise((resolve) => setTimeout(resolve, 200));
    expect(Date.now() - started).toBeLessThan(6_000);
    expectError(await me(key.secret!), 401, 'invalid_api_key');
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    expectError(
      await apiClient(h.api.url, other.key)('DELETE', `/api/v1/api-keys/${h.workspace.apiKey.id}`, { headers: idem() }),
      404,
      'not_found',
    );
  });

  describe('keys made by keys', () => {
    const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
    const profileOf = async (key: string) => ((await me(key)).body.data as { rate_limit_profile: Profile }).rate_limit_profile;
    const waitRefused = async (key: string) => {
      const started = Date.now();
      while ((await me(key)).status === 200 && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 200));
      expectError(await me(key), 401, 'invalid_api_key');
    };

    it("cannot outlive the key that makes it: a later expiry is 403 EXPIRY_NOT_HELD, none given is the parent's", async () => {
      const parentExpiry = new Date(Date.now() + 86_400_000);
      const parent = await createOrgWithKey(h.stack.orm, { scopes: ['api_keys:write', 'me:read'], expiresAt: parentExpiry });
      const asParent = apiClient(h.api.url, parent.key);
      const later = await asParent('POST', '/api/v1/api-keys', {
        headers: idem(),
        body: { name: 'Later', scopes: ['me:read'], expires_at: ahead(2 * 86_400_000) },
      });
      expectError(later, 403, 'forbidden');
      expect(reasonOf(later)).toBe('EXPIRY_NOT_HELD');
      expect((later.body.error?.details as { parent_expires_at?: string }).parent_expires_at).toBe(parentExpiry.toISOString());
      const forever = await asParent('POST', '/api/v1/api-keys', {
        headers: idem(),
        body: { name: 'No expiry given', scopes: ['me:read'] },
      });
      expect(forever.status, JSON.stringify(forever.body)).toBe(201);
      expect(forever.body.data).toMatchObject({ expires_at: parentExpiry.toISOString(), parent_key_id: parent.apiKey.id });
      const sooner = await asParent('POST', '/api/v1/api-keys', {
        headers: idem(),
        body: { name: 'Sooner', scopes: ['me:read'], expires_at: ahead(3_600_000) },
      });
      expect(sooner.status, JSON.stringify(sooner.body)).toBe(201);
    });

    it("cannot out-rate the key that makes it: a higher rate_limit is 403 RATE_LIMIT_NOT_HELD, none given is the parent's own", async () => {
      const parent = await createOrgWithKey(h.stack.orm, { scopes: ['api_keys:write', 'me:read'], rateLimitPerMinute: 90, burst: 15 });
      const asParent = apiClient(h.api.url, parent.key);
      for (const rate_limit of [{ requests_per_minute: 91 }, { requests_per_minute: 60, burst: 16 }]) {
        const faster = await asParent('POST', '/api/v1/api-keys', {
          headers: idem(),
          body: { name: 'Faster', scopes: ['me:read'], rate_limit },
        });
        expectError(faster, 403, 'forbidden');
        expect(reasonOf(faster)).toBe('RATE_LIMIT_NOT_HELD');
      }
      // Without a rate_limit the child keeps the parent's own limit, not the workspace's default (300 a minute).
      const same = (await asParent('POST', '/api/v1/api-keys', { headers: idem(), body: { name: 'Same rate', scopes: ['me:read'] } })).body
        .data as Key;
      expect(await profileOf(same.secret!)).toEqual({ requests_per_minute: 90, burst: 15, source: 'key' });
      const slower = await asParent('POST', '/api/v1/api-keys', {
        headers: idem(),
        body: { name: 'Slower', scopes: ['me:read'], rate_limit: { requests_per_minute: 30 } },
      });
      expect(slower.status, JSON.stringify(slower.body)).toBe(201);
      expect(await profileOf((slower.body.data as Key).secret!)).toEqual({ requests_per_minute: 30, burst: 15, source: 'key' });
      expectError(
        await asParent('POST', '/api/v1/api-keys', {
          headers: idem(),
          body: { name: 'Zero', scopes: ['me:read'], rate_limit: { requests_per_minute: 0 } },
        }),
        400,
        'invalid_request',
      );
    });

    it('cannot out-scope the key that makes it, through a child either', async () => {
      const parent = await createOrgWithKey(h.stack.orm, { scopes: ['api_keys:write', 'me:read'] });
      const child = (
        await apiClient(h.api.url, parent.key)('POST', '/api/v1/api-keys', {
          headers: idem(),
          body: { name: 'Child', scopes: ['api_keys:write'] },
        })
      ).body.data as Key;
      const grandchild = await apiClient(h.api.url, child.secret)('POST', '/api/v1/api-keys', {
        headers: idem(),
        body: { name: 'Grandchild', scopes: ['me:read'] },
      });
      expectError(grandchild, 403, 'forbidden');
      expect(reasonOf(grandchild)).toBe('SCOPE_NOT_HELD');
    });

    it('is revoked with the key that made it, at every depth; a sibling and the key above it stay', async () => {
      const root = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
      const asRoot = apiClient(h.api.url, root.key);
      const makeKey = async (as: typeof asRoot, name: string) => {
        const made = await as('POST', '/api/v1/api-keys', { headers: idem(), body: { name, scopes: ['api_keys:write', 'me:read'] } });
        expect(made.status, JSON.stringify(made.body)).toBe(201);
        return made.body.data as Key;
      };
      const parent = await makeKey(asRoot, 'Parent');
      const child = await makeKey(apiClient(h.api.url, parent.secret), 'Child');
      const grandchild = await makeKey(apiClient(h.api.url, child.secret), 'Grandchild');
      const sibling = await makeKey(asRoot, 'Sibling');
      expect(grandchild.parent_key_id).toBe(child._id);
      expect(child.parent_key_id).toBe(parent._id);

      const revoked = await asRoot('DELETE', `/api/v1/api-keys/${parent._id}`, { headers: idem() });
      expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
      const listed = (await asRoot('GET', '/api/v1/api-keys?limit=100')).body.data as Key[];
      const byId = new Map(listed.map((key) => [key._id, key]));
      for (const key of [parent, child, grandchild]) expect(byId.get(key._id)?.revoked_at, key.name).not.toBeNull();
      expect(byId.get(sibling._id)?.revoked_at).toBeNull();
      for (const key of [parent, child, grandchild]) await waitRefused(key.secret!);
      expect((await me(sibling.secret!)).status).toBe(200);
      expect((await me(root.key)).status).toBe(200);
    });
  });
});
