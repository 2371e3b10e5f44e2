import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey } from '../../db/entities/index.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';

type Key = { _id: string; name: string; prefix: string; mode: string; scopes: string[]; secret?: string; expires_at: string | null; revoked_at: string | null };
const reasonOf = (response: { body: { error?: { details?: unknown } } }) => (response.body.error?.details as { reason?: string } | undefined)?.reason;

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
    const live = await apiClient(h.api.url, testKey.key)('POST', '/api/v1/api-keys', { headers: idem(), body: { name: 'Live', scopes: ['me:read'], mode: 'live' } });
    expectError(live, 403, 'forbidden');
    expect(reasonOf(live)).toBe('MODE_NOT_HELD');
  });

  it('takes an expiry from a minute to three years ahead, and refuses the key once it has expired', async () => {
    const ahead = (ms: number) => new Date(Date.now() + ms).toISOString();
    expectError(await create({ name: 'Too soon', scopes: ['me:read'], expires_at: ahead(30_000) }), 400, 'invalid_request');
    expectError(await create({ name: 'Too far', scopes: ['me:read'], expires_at: ahead(3 * 365 * 86_400_000 + 86_400_000) }), 400, 'invalid_request');
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
    while ((await me(key.secret!)).status === 200 && Date.now() - started < 10_000) await new Promise((resolve) => setTimeout(resolve, 200));
    expect(Date.now() - started).toBeLessThan(6_000);
    expectError(await me(key.secret!), 401, 'invalid_api_key');
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    expectError(await apiClient(h.api.url, other.key)('DELETE', `/api/v1/api-keys/${h.workspace.apiKey.id}`, { headers: idem() }), 404, 'not_found');
  });
});
