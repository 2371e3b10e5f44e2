import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { PUBLIC_SCOPES, SCOPE_CATALOG } from '../../src/modules/auth/scopes.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

describe('GET /api/v1/me', () => {
  let stack: TestStack;
  let api: RunningApi;
  let workspace: Awaited<ReturnType<typeof createOrgWithKey>>;
  let request: ReturnType<typeof apiClient>;

  beforeAll(async () => {
    stack = await createTestStack();
    api = await startApi(stack.config, createLogger('silent'));
    workspace = await createOrgWithKey(stack.orm, { mode: 'live', scopes: ['all'] });
    request = apiClient(api.url, workspace.key);
  });
  afterAll(async () => {
    await api.close();
    await stack.close();
  });

  it('returns the key context of the calling key', async () => {
    const response = await request('GET', '/api/v1/me');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.ok).toBe(true);
    expect(response.body.data).toEqual({
      org_id: workspace.org.id,
      org_slug: workspace.org.slug,
      org_name: workspace.org.name,
      actor_user_id: workspace.owner.id,
      key_id: workspace.apiKey.id,
      auth_method: 'api_key',
      scopes: [...PUBLIC_SCOPES],
      enabled_scope_catalog: SCOPE_CATALOG.map((s) => ({
        id: s.id,
        domain: s.domain,
        access: s.access,
        launch: s.launch,
        description: s.description,
      })),
      rate_limit_profile: { requests_per_minute: 300, burst: 100, source: 'default' },
    });
    expect(response.body.meta?.request_id).toEqual(expect.any(String));
    expect(response.headers.get('x-request-id')).toBe(response.body.meta?.request_id);
  });

  it('echoes a client request id', async () => {
    const response = await request('GET', '/api/v1/me', { headers: { 'x-request-id': 'client-req-42' } });
    expect(response.headers.get('x-request-id')).toBe('client-req-42');
    expect(response.body.meta?.request_id).toBe('client-req-42');
  });

  it('reports a per-key rate-limit profile', async () => {
    const limited = await createOrgWithKey(stack.orm, { scopes: ['me:read'], rateLimitPerMinute: 90, burst: 15 });
    const response = await request('GET', '/api/v1/me', { key: limited.key });
    expect(response.body.data).toMatchObject({
      scopes: ['me:read'],
      rate_limit_profile: { requests_per_minute: 90, burst: 15, source: 'key' },
    });
  });

  describe('authentication', () => {
    it.each([
      ['no Authorization header', null],
      ['a malformed key', 'not-a-key'],
      ['an unknown well-formed key', 'hrld_test_0123456789abcdefghijABCDEFGHIJ0123456789'],
    ])('answers 401 invalid_api_key for %s', async (_label, key) => {
      expectError(await request('GET', '/api/v1/me', { key }), 401, 'invalid_api_key');
    });

    it('answers 401 for a known prefix with the wrong secret', async () => {
      const wrong = workspace.key.slice(0, -4) + (workspace.key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
      expectError(await request('GET', '/api/v1/me', { key: wrong }), 401, 'invalid_api_key');
    });

    it.each(['api_key', 'key', 'token', 'access_token'])(
      'refuses a key in the query string (?%s=) even with a valid header',
      async (param) => {
        const response = await request('GET', `/api/v1/me?${param}=${workspace.key}`);
        expectError(response, 401, 'invalid_api_key');
        expect(JSON.stringify(response.body)).not.toContain(workspace.key);
      },
    );

    it('stops accepting a revoked key within seconds', async () => {
      const doomed = await createOrgWithKey(stack.orm, { scopes: ['me:read'] });
      expect((await request('GET', '/api/v1/me', { key: doomed.key })).status).toBe(200);
      await createApiKeysService({ orm: stack.orm }).revokeApiKey(doomed.apiKey.id);
      const revokedAt = Date.now();
      let status = 200;
      while (status === 200 && Date.now() - revokedAt < 15_000) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        status = (await request('GET', '/api/v1/me', { key: doomed.key })).status;
      }
      expect(status).toBe(401);
      expect(Date.now() - revokedAt).toBeLessThan(10_000);
    });
  });

  it('answers 403 missing_scope naming the required scope', async () => {
    const narrow = await createOrgWithKey(stack.orm, { scopes: ['contacts:read'] });
    const response = await request('GET', '/api/v1/me', { key: narrow.key });
    expectError(response, 403, 'missing_scope');
    expect(response.body.error?.details).toEqual({ required_scope: 'me:read' });
  });

  describe('envelope for unmatched requests', () => {
    it('answers 404 not_found for an unknown route', async () => {
      expectError(await request('GET', '/api/v1/nothing-here'), 404, 'not_found');
      expectError(await request('GET', '/elsewhere'), 404, 'not_found');
    });

    it('answers 405 method_not_allowed for a wrong method on a known path', async () => {
      const response = await request('DELETE', '/api/v1/me');
      expectError(response, 405, 'method_not_allowed');
      expect(response.headers.get('allow')).toContain('GET');
    });
  });
});
