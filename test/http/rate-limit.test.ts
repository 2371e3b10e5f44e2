import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Organization } from '../../db/entities/index.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi } from '../../src/main-api.ts';
import { freePort } from '../../src/dev/ports.ts';
import { loadConfig } from '../../src/config.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';

describe('rate limits (token bucket per key in Redis)', () => {
  let h: ApiHarness;
  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(() => h.close());

  it('lets a 60/min key with burst 10 make 10 immediate requests, refuses the 11th with Retry-After, then lets it through', async () => {
    const { key } = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 60, burst: 10 });
    const request = apiClient(h.api.url, key);
    const remaining: string[] = [];
    for (let i = 0; i < 10; i += 1) {
      const response = await request('GET', '/api/v1/me');
      expect(response.status, `request ${i + 1}: ${JSON.stringify(response.body)}`).toBe(200);
      expect(response.headers.get('ratelimit-limit')).toBe('10');
      remaining.push(response.headers.get('ratelimit-remaining')!);
    }
    // One token per second refills meanwhile, so later values may lag by one; never increase.
    const counts = remaining.map(Number);
    expect(counts[0]).toBe(9);
    counts.slice(1).forEach((count, i) => expect(count).toBeLessThanOrEqual(counts[i]!));
    expect(counts.at(-1)).toBeLessThanOrEqual(1);
    const refused = await request('GET', '/api/v1/me');
    expectError(refused, 429, 'rate_limited');
    const retryAfter = Number(refused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(2);
    expect(refused.body.error?.details).toMatchObject({ retry_after_seconds: retryAfter, requests_per_minute: 60, burst: 10 });
    expect(refused.headers.get('ratelimit-remaining')).toBe('0');

    await new Promise((resolve) => setTimeout(resolve, retryAfter * 1000));
    const later = await request('GET', '/api/v1/me');
    expect(later.status, JSON.stringify(later.body)).toBe(200);
  });

  it('puts the profile in meta.rate_limit of every success and the headers on errors too', async () => {
    const { key } = await createOrgWithKey(h.stack.orm, { scopes: ['contacts:read'], rateLimitPerMinute: 120, burst: 30 });
    const request = apiClient(h.api.url, key);
    const ok = await request('GET', '/api/v1/contacts');
    expect(ok.body.meta?.rate_limit).toEqual({ limit: 30, remaining: 29, reset: expect.any(Number), requests_per_minute: 120, burst: 30 });
    const forbidden = await request('GET', '/api/v1/me');
    expectError(forbidden, 403, 'missing_scope');
    expect(forbidden.headers.get('ratelimit-limit')).toBe('30');
    expect(forbidden.headers.get('ratelimit-remaining')).toBe('28');
    expect(Number(forbidden.headers.get('ratelimit-reset'))).toBeGreaterThanOrEqual(1);
  });

  it('gives concurrent requests of one key one token each: a burst of 10 lets 10 of 13 through, with remaining 9 down to 0', async () => {
    const { key } = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 60, burst: 10 });
    const request = apiClient(h.api.url, key);
    const responses = await Promise.all(Array.from({ length: 13 }, () => request('GET', '/api/v1/contacts')));
    const passed = responses.filter((response) => response.status === 200);
    // One token per second refills meanwhile: a slow machine may let an eleventh through.
    expect(passed.length, JSON.stringify(responses.map((response) => response.status))).toBeGreaterThanOrEqual(10);
    expect(passed.length).toBeLessThanOrEqual(11);
    const remaining = passed.map((response) => Number(response.headers.get('ratelimit-remaining'))).sort((a, b) => b - a);
    expect(remaining.slice(0, 10)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    for (const refused of responses.filter((response) => response.status !== 200)) {
      expectError(refused, 429, 'rate_limited');
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
    }
  });

  it('counts writes and reads in the same bucket', async () => {
    const { key } = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 60, burst: 2 });
    const request = apiClient(h.api.url, key);
    expect((await request('POST', '/api/v1/contacts', { headers: idem(), body: { email: 'w@example.com' } })).status).toBe(201);
    expect((await request('GET', '/api/v1/contacts')).status).toBe(200);
    expectError(await request('GET', '/api/v1/contacts'), 429, 'rate_limited');
  });

  it('applies a workspace profile when the key has none, and a key profile over it', async () => {
    const { org, key } = await createOrgWithKey(h.stack.orm, { scopes: ['all'] });
    const em = h.stack.orm.em.fork();
    await em.nativeUpdate(Organization, { id: org.id }, { rateLimitPerMinute: 90, rateLimitBurst: 3 });
    const request = apiClient(h.api.url, key);
    // The key lookup cache holds the old profile for up to 5 s.
    let me = await request('GET', '/api/v1/me');
    for (let attempt = 0; attempt < 40; attempt += 1) {
      if ((me.body.data as { rate_limit_profile: { source: string } }).rate_limit_profile.source === 'workspace') break;
      await new Promise((resolve) => setTimeout(resolve, 250));
      me = await request('GET', '/api/v1/me');
    }
    expect((me.body.data as { rate_limit_profile: unknown }).rate_limit_profile).toEqual({
      requests_per_minute: 90,
      burst: 3,
      source: 'workspace',
    });
    expect(me.headers.get('ratelimit-limit')).toBe('3');
  });

  it('fails open when Redis is unreachable: requests pass, marked degraded, without Remaining/Reset', async () => {
    const closedPort = await freePort();
    const config = loadConfig({ ...h.stack.env, REDIS_URL: `redis://127.0.0.1:${closedPort}` });
    const api = await startApi(config, createLogger('silent'));
    try {
      const request = apiClient(api.url, h.workspace.key);
      for (let i = 0; i < 3; i += 1) {
        const response = await request('GET', '/api/v1/me');
        expect(response.status, JSON.stringify(response.body)).toBe(200);
        expect(response.body.meta?.rate_limit).toMatchObject({ degraded: true, remaining: null, reset: null });
        expect(response.headers.get('ratelimit-limit')).toBe('10000');
        expect(response.headers.get('ratelimit-remaining')).toBeNull();
      }
    } finally {
      await api.close();
    }
  });
});
