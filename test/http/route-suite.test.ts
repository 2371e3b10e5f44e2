import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isWrite, type AnyRoute } from '../../src/http/route.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { PUBLIC_SCOPES } from '../../src/modules/auth/scopes.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';
import { RESOURCE_FIXTURES, VALID_BODIES } from '../support/resource-fixtures.ts';

const SAMPLE_ID = '0123456789abcdef01234567';

/** A concrete URL for a route: `:id`-style params filled in. */
function urlFor(route: AnyRoute, id = SAMPLE_ID): string {
  return `/api/v1${route.path.replace(/:[A-Za-z0-9_]+/g, id)}`;
}

/**
 * The auth and tenancy contract, applied to every route the API mounts (later features get it
 * by registering their routes): no key, bad key, key in the query string, revoked key → 401;
 * a key without the route's scope → 403 missing_scope; another workspace's id → 404; a write
 * without a valid Idempotency-Key → 400.
 */
describe('every route: auth, scopes, tenancy, idempotency keys', async () => {
  let h: ApiHarness;
  let routes: readonly AnyRoute[] = [];
  let revokedKey = '';
  let other: Awaited<ReturnType<typeof createOrgWithKey>>;

  // Routes are known only once the api runs; vitest needs the list while collecting.
  const { createApiServices, createRoutes } = await import('../../src/api-composition.ts');
  const { createCursorCodec } = await import('../../src/http/cursor.ts');
  const { loadConfig } = await import('../../src/config.ts');
  const declared = createRoutes(
    createApiServices({
      orm: undefined as never,
      idempotency: undefined as never,
      config: loadConfig({}),
      temporal: undefined as never,
      logger: undefined as never,
      blobs: null,
    }),
    createCursorCodec(undefined),
  );

  beforeAll(async () => {
    h = await startApiHarness();
    routes = h.api.routes;
    const revoked = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    await createApiKeysService({ orm: h.stack.orm }).revokeApiKey(revoked.apiKey.id);
    revokedKey = revoked.key;
    other = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
  });
  afterAll(() => h.close());

  it('covers the routes the api mounts', () => {
    expect(routes.map((r) => r.operationId)).toEqual(declared.map((r) => r.operationId));
    expect(routes.length).toBeGreaterThan(0);
  });

  it('every route requires a scope of the catalog', () => {
    for (const route of routes) expect(PUBLIC_SCOPES, route.operationId).toContain(route.scope);
  });

  it('every route with an id has a tenancy fixture', () => {
    const missing = routes.filter((r) => r.path.includes(':') && !RESOURCE_FIXTURES[r.operationId]).map((r) => r.operationId);
    expect(missing).toEqual([]);
  });

  describe.each(declared.map((r) => [`${r.method} ${r.path}`, r.operationId] as const))('%s', (_name, operationId) => {
    const route = () => routes.find((r) => r.operationId === operationId)!;
    const write = (): Record<string, string> =>
      isWrite(route()) ? { 'idempotency-key': `suite-${Math.random().toString(36).slice(2, 12)}` } : {};

    it('401 without a key', async () => {
      expectError(await h.request(route().method, urlFor(route()), { key: null, headers: write() }), 401, 'invalid_api_key');
    });

    it('401 with a malformed or unknown key', async () => {
      for (const key of ['nope', 'hrld_live_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA']) {
        expectError(await h.request(route().method, urlFor(route()), { key, headers: write() }), 401, 'invalid_api_key');
      }
    });

    it('401 with the key in the query string', async () => {
      const response = await h.request(route().method, `${urlFor(route())}?api_key=${h.workspace.key}`, { key: null, headers: write() });
      expectError(response, 401, 'invalid_api_key');
    });

    it('401 with a revoked key', async () => {
      expectError(await h.request(route().method, urlFor(route()), { key: revokedKey, headers: write() }), 401, 'invalid_api_key');
    });

    it('403 missing_scope with a key lacking the scope, naming it', async () => {
      const others = PUBLIC_SCOPES.filter((s) => s !== route().scope);
      const narrow = await createOrgWithKey(h.stack.orm, { scopes: others });
      const response = await h.request(route().method, urlFor(route()), { key: narrow.key, headers: write() });
      expectError(response, 403, 'missing_scope');
      expect(response.body.error?.details).toEqual({ required_scope: route().scope });
    });

    it("404 for another workspace's resource", async ({ skip }) => {
      const fixture = RESOURCE_FIXTURES[operationId];
      if (!route().path.includes(':')) skip('no id in the path');
      const foreignId = await fixture!.create(h.stack.orm, other.org.id, { config: h.stack.config });
      const response = await h.request(route().method, urlFor(route(), foreignId), {
        headers: write(),
        ...(fixture!.validBody ? { body: fixture!.validBody } : {}),
      });
      expectError(response, 404, 'not_found');
      const own = await h.request(route().method, urlFor(route(), foreignId), {
        key: other.key,
        headers: write(),
        ...(fixture!.validBody ? { body: fixture!.validBody } : {}),
      });
      expect(own.status, JSON.stringify(own.body)).toBeLessThan(300);
    });

    it('400 for a missing, short or long Idempotency-Key on a write', async ({ skip }) => {
      if (!isWrite(route())) skip('not a write');
      const body = VALID_BODIES[operationId]?.() ?? RESOURCE_FIXTURES[operationId]?.validBody ?? {};
      const optional = route().idempotency === 'optional';
      const cases: Record<string, string>[] = [{ 'idempotency-key': 'short' }, { 'idempotency-key': 'k'.repeat(129) }];
      if (!optional) cases.push({});
      for (const headers of cases) {
        const response = await h.request(route().method, urlFor(route()), { headers, body });
        expectError(response, 400, 'invalid_request');
        expect(JSON.stringify(response.body.error?.details)).toContain('Idempotency-Key');
      }
    });
  });

  it('a key in the query string never reaches the api log', async () => {
    const lines: string[] = [];
    const { createLogger } = await import('../../src/logger.ts');
    const { startApi } = await import('../../src/main-api.ts');
    const api = await startApi(
      h.stack.config,
      createLogger('debug', {}, (line) => lines.push(line)),
    );
    try {
      const request = apiClient(api.url);
      await request('GET', `/api/v1/me?api_key=${h.workspace.key}`);
      await request('GET', `/api/v1/contacts?token=${h.workspace.key}`, { key: h.workspace.key });
    } finally {
      await api.close();
    }
    expect(lines.some((line) => line.includes('"msg":"request"'))).toBe(true);
    expect(lines.join('\n')).not.toContain(h.workspace.key);
    expect(lines.join('\n')).not.toContain(h.workspace.key.slice(10));
  });
});
