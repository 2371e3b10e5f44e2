import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient } from '../support/dashboard-client.ts';
import { unique } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';

/**
 * The HTTP edge without an API key (issue 30): forwarded headers believed only from a trusted
 * proxy (TRUSTED_PROXIES), the sign-in limit per real address, Secure cookies and HSTS only over
 * real HTTPS, the API's no-sniff / no-store answers, and one-use tokens kept out of log lines.
 * Two api processes on one database: `direct` trusts no proxy (the default), `proxied` trusts
 * loopback, as if a reverse proxy on this host stood in front of it.
 */
describe('the HTTP edge: proxies, sign-in limit, secure transport, log lines', () => {
  let h: ApiHarness;
  let proxied: RunningApi;
  const lines: string[] = [];
  const wrongSignIn = (url: string, forwardedFor: string) =>
    dashboardClient(url).submit(
      '/dashboard/sign-in',
      '/dashboard/sign-in',
      { email: `${unique('nobody').toLowerCase()}@example.com`, password: 'not the password' },
      { 'x-forwarded-for': forwardedFor },
    );

  beforeAll(async () => {
    h = await startApiHarness();
    const config = h.stack.config;
    proxied = await startApi(
      {
        ...config,
        http: { ...config.http, trustedProxies: ['127.0.0.1', '::1'] },
        redis: { ...config.redis, keyPrefix: `${config.redis.keyPrefix}proxied:` },
      },
      createLogger('debug', {}, (line) => lines.push(line)),
    );
  }, 60_000);
  afterAll(async () => {
    await proxied?.close();
    await h?.close();
  });

  it('does not believe X-Forwarded-For from a peer that is no trusted proxy: rotating it does not escape the per-address sign-in limit', async () => {
    // At once, so the bucket (60 a minute, burst 60) barely refills meanwhile.
    const statuses = await Promise.all(
      Array.from({ length: 75 }, async (_, i) => (await wrongSignIn(h.api.url, `198.51.100.${i + 1}`)).status),
    );
    expect(statuses.filter((status) => status === 401).length, String(statuses)).toBeLessThanOrEqual(66);
    expect(statuses.filter((status) => status === 429).length, String(statuses)).toBeGreaterThanOrEqual(9);
  }, 120_000);

  it('believes a trusted proxy, taking the right-most address that is not a proxy, whatever the client wrote left of it', async () => {
    const statuses = await Promise.all(
      Array.from({ length: 75 }, async (_, i) => (await wrongSignIn(proxied.url, `10.${i}.0.1, 203.0.113.7`)).status),
    );
    expect(statuses.filter((status) => status === 401).length, String(statuses)).toBeLessThanOrEqual(66);
    expect(statuses.filter((status) => status === 429).length, String(statuses)).toBeGreaterThanOrEqual(9);
    // Another client behind the same proxy has its own limit.
    expect((await wrongSignIn(proxied.url, '203.0.113.7, 203.0.113.8')).status).toBe(401);
  }, 120_000);

  it('marks cookies Secure and sends HSTS only when the request really came over HTTPS (X-Forwarded-Proto from a trusted proxy)', async () => {
    const signInPage = async (url: string, proto: string) => {
      const response = await fetch(`${url}/dashboard/sign-in`, { headers: { 'x-forwarded-proto': proto } });
      return { cookie: response.headers.getSetCookie().join('\n'), hsts: response.headers.get('strict-transport-security') };
    };
    const spoofed = await signInPage(h.api.url, 'https');
    expect(spoofed.cookie).toContain('herald_form=');
    expect(spoofed.cookie).not.toMatch(/;\s*secure/i);
    expect(spoofed.hsts).toBeNull();
    const behindTls = await signInPage(proxied.url, 'https');
    expect(behindTls.cookie).toMatch(/herald_form=[^\n]*;\s*secure/i);
    expect(behindTls.hsts).toMatch(/^max-age=\d+/);
    const behindPlain = await signInPage(proxied.url, 'http');
    expect(behindPlain.cookie).not.toMatch(/;\s*secure/i);
    expect(behindPlain.hsts).toBeNull();
  });

  it('answers the API with nosniff and no-store, and HSTS only over real HTTPS', async () => {
    const direct = await h.request('GET', '/api/v1/me', { headers: { 'x-forwarded-proto': 'https' } });
    expect(direct.status, JSON.stringify(direct.body)).toBe(200);
    expect(direct.headers.get('x-content-type-options')).toBe('nosniff');
    expect(direct.headers.get('cache-control')).toBe('no-store');
    expect(direct.headers.get('strict-transport-security')).toBeNull();
    const refused = await h.request('GET', '/api/v1/me', { key: null });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('x-content-type-options')).toBe('nosniff');
    const viaProxy = await apiClient(proxied.url, h.workspace.key)('GET', '/api/v1/me', { headers: { 'x-forwarded-proto': 'https' } });
    expect(viaProxy.status, JSON.stringify(viaProxy.body)).toBe(200);
    expect(viaProxy.headers.get('strict-transport-security')).toMatch(/^max-age=\d+/);
    expect(viaProxy.headers.get('cache-control')).toBe('no-store');
  });

  it('keeps one-use tokens in paths out of every log line', async () => {
    const token = `tok${unique('secret').replace(/[^\w]/g, '')}`;
    lines.length = 0;
    for (const path of [
      `/dashboard/sign-in/${token}`,
      `/dashboard/invite/${token}`,
      `/unsubscribe/${token}`,
      `/t/o/${token}.gif`,
      `/t/c/${token}?u=https%3A%2F%2Fshop.example`,
      `/uploads/att_${token}?expires=1&sig=${token}`,
    ]) {
      await (await fetch(`${proxied.url}${path}`)).arrayBuffer();
    }
    await (await fetch(`${proxied.url}/dashboard/sign-in/${token}`, { method: 'POST' })).arrayBuffer();
    const requests = lines.filter((line) => line.includes('"msg":"request"'));
    expect(requests.length, lines.join('\n')).toBeGreaterThanOrEqual(7);
    expect(requests.filter((line) => line.includes('[redacted]')).length, lines.join('\n')).toBeGreaterThanOrEqual(6);
    for (const line of lines.filter((l) => !l.includes('att_'))) expect(line).not.toContain(token);
    for (const line of lines) expect(line).not.toContain(`sig=`);
  });
});
