import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/dev/ports.ts';
import { nextDelay } from '../../src/modules/webhooks/delivery-engine.ts';
import { postWebhook, retryAfterMs } from '../../src/modules/webhooks/webhook-http.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

const allow = { allowPrivateTargets: true };
const deny = { allowPrivateTargets: false };

describe('postWebhook (SSRF-safe HTTP of deliveries)', () => {
  let receiver: WebhookReceiver;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
  });
  afterAll(async () => {
    receiver.releaseHanging();
    await receiver.close();
  });

  it('posts the body with its headers and returns status, excerpt and latency', async () => {
    receiver.respond('/ok', () => ({ status: 201, body: 'thanks\u0000!' }));
    const result = await postWebhook(receiver.url('/ok'), { 'Content-Type': 'application/json', 'X-Test': '1' }, '{"a":"é"}', allow);
    expect(result).toMatchObject({ statusCode: 201, excerpt: 'thanks!', error: null, address: '127.0.0.1' });
    expect(result.latencyMs).toBeGreaterThanOrEqual(0);
    const [request] = receiver.requests('/ok');
    expect(request).toMatchObject({ method: 'POST', body: '{"a":"é"}' });
    expect(request!.headers).toMatchObject({
      'content-type': 'application/json',
      'x-test': '1',
      'content-length': String(Buffer.byteLength('{"a":"é"}')),
    });
  });

  it('connects to the address it checked, keeping the URL host in the Host header', async () => {
    const resolve = () => Promise.resolve([{ address: '127.0.0.1', family: 4 }]);
    const result = await postWebhook(`http://hooks.example.test:${receiver.port}/pinned`, {}, '{}', { ...allow, resolve });
    expect(result).toMatchObject({ statusCode: 200, address: '127.0.0.1' });
    expect(receiver.requests('/pinned')[0]!.headers.host).toBe(`hooks.example.test:${receiver.port}`);
  });

  it.each([
    ['a loopback IP literal', '127.0.0.1', undefined, /^refused: 127\.0\.0\.1 resolves to 127\.0\.0\.1, a loopback address/],
    [
      'a name resolving to a private address',
      'internal.example.test',
      ['10.1.2.3'],
      /^refused: internal\.example\.test resolves to 10\.1\.2\.3, a private address/,
    ],
    [
      'a name with one public and one metadata address',
      'mixed.example.test',
      ['93.184.215.14', '169.254.169.254'],
      /169\.254\.169\.254, a metadata address/,
    ],
    ['an IPv6 loopback literal', '[::1]', undefined, /^refused: \[::1\] resolves to ::1, a loopback address/],
  ])('refuses %s when private targets are not allowed, before any connection', async (_name, host, addresses, message) => {
    const resolve = () => Promise.resolve((addresses ?? []).map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
    const before = receiver.requests().length;
    const result = await postWebhook(`http://${host}:${receiver.port}/private`, {}, '{}', { ...deny, resolve });
    expect(result.statusCode).toBeNull();
    expect(result.error).toMatch(message);
    expect(receiver.requests()).toHaveLength(before);
  });

  it('reports DNS failures, refused connections and unsupported schemes as errors', async () => {
    const notFound = () => Promise.reject(Object.assign(new Error('getaddrinfo ENOTFOUND nowhere.example.test'), { code: 'ENOTFOUND' }));
    expect((await postWebhook('https://nowhere.example.test/', {}, '{}', { ...deny, resolve: notFound })).error).toBe(
      'DNS: nowhere.example.test does not resolve',
    );
    const empty = () => Promise.resolve([]);
    expect((await postWebhook('https://empty.example.test/', {}, '{}', { ...deny, resolve: empty })).error).toBe(
      'DNS: empty.example.test has no addresses',
    );
    const port = await freePort();
    expect((await postWebhook(`http://127.0.0.1:${port}/`, {}, '{}', allow)).error).toBe(`connection refused (127.0.0.1:${port})`);
    expect((await postWebhook('ftp://127.0.0.1/', {}, '{}', allow)).error).toBe('unsupported URL scheme ftp:');
  });

  it('does not follow a redirect', async () => {
    receiver.respond('/redirect', () => ({ status: 308, headers: { location: '/target' } }));
    const result = await postWebhook(receiver.url('/redirect'), {}, '{}', allow);
    expect(result).toMatchObject({ statusCode: 308, error: 'redirect (308 to /target) not followed: register the final URL' });
    expect(receiver.requests('/target')).toHaveLength(0);
  });

  it('gives up after the timeout, whether no response or an unfinished body', async () => {
    receiver.respond('/hang', () => 'hang');
    const hung = await postWebhook(receiver.url('/hang'), {}, '{}', { ...allow, timeoutMs: 300 });
    expect(hung).toMatchObject({ statusCode: null, error: 'timeout: no complete response within 0.3 s' });
    expect(hung.latencyMs).toBeGreaterThanOrEqual(290);
    expect(hung.latencyMs).toBeLessThan(2_000);

    const trickle = createServer((_req, res) => {
      res.writeHead(200);
      res.write('partial');
    });
    await new Promise<void>((resolve) => trickle.listen(0, '127.0.0.1', resolve));
    try {
      const unfinished = await postWebhook(`http://127.0.0.1:${(trickle.address() as AddressInfo).port}/`, {}, '{}', {
        ...allow,
        timeoutMs: 300,
      });
      expect(unfinished).toMatchObject({ statusCode: null, error: 'timeout: no complete response within 0.3 s' });
    } finally {
      trickle.closeAllConnections();
      trickle.close();
    }
  });

  it('keeps 1 KiB of a large response', async () => {
    receiver.respond('/big', () => ({ body: 'é'.repeat(200_000) }));
    const result = await postWebhook(receiver.url('/big'), {}, '{}', allow);
    expect(result.statusCode).toBe(200);
    expect(result.excerpt).toBe('é'.repeat(1024));
  });
});

describe('kept-alive connections', () => {
  /** A receiver that records the client port of every request and can drop idle connections. */
  async function portRecorder() {
    const ports: number[] = [];
    const server = createServer((req, res) => {
      ports.push(req.socket.remotePort!);
      req.resume();
      req.on('end', () => res.end('ok'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    return {
      ports,
      url,
      server,
      close: () => {
        server.closeAllConnections();
        return new Promise<void>((resolve) => server.close(() => resolve()));
      },
    };
  }

  it('reuses one connection for consecutive attempts to the same checked address', async () => {
    const receiver = await portRecorder();
    try {
      for (let i = 0; i < 3; i += 1) expect((await postWebhook(receiver.url, {}, '{}', allow)).statusCode).toBe(200);
      expect(receiver.ports).toHaveLength(3);
      expect(new Set(receiver.ports).size).toBe(1);
    } finally {
      await receiver.close();
    }
  });

  it('sends once more on a fresh connection when the receiver had closed the idle one', async () => {
    const receiver = await portRecorder();
    try {
      expect((await postWebhook(receiver.url, {}, '{}', allow)).statusCode).toBe(200);
      // The receiver drops the idle connection without telling the client first (as a restart or
      // a short keep-alive timeout does); the next attempt finds it closed when it writes.
      receiver.server.closeIdleConnections();
      await new Promise((resolve) => setTimeout(resolve, 50));
      const second = await postWebhook(receiver.url, {}, '{}', allow);
      expect(second).toMatchObject({ statusCode: 200, error: null });
      expect(receiver.ports).toHaveLength(2);
      expect(receiver.ports[1]).not.toBe(receiver.ports[0]);
    } finally {
      await receiver.close();
    }
  });
});

describe('retry timing', () => {
  it('reads Retry-After on 429 and 503 only, in seconds or as an HTTP date', () => {
    const now = Date.parse('2026-11-21T10:00:00Z');
    expect(retryAfterMs(429, { 'retry-after': '120' }, now)).toBe(120_000);
    expect(retryAfterMs(503, { 'retry-after': 'Sat, 21 Nov 2026 10:00:30 GMT' }, now)).toBe(30_000);
    expect(retryAfterMs(503, { 'retry-after': 'Sat, 21 Nov 2026 09:00:00 GMT' }, now)).toBe(0);
    expect(retryAfterMs(500, { 'retry-after': '120' }, now)).toBeNull();
    expect(retryAfterMs(429, { 'retry-after': 'soon' }, now)).toBeNull();
    expect(retryAfterMs(429, {}, now)).toBeNull();
  });

  it('jitters the scheduled delay; Retry-After replaces it within [1 s, max(scheduled, 1 h)]', () => {
    expect(nextDelay(5_000, 0.8, null)).toBe(4_000);
    expect(nextDelay(5_000, 1.2, null)).toBe(6_000);
    expect(nextDelay(200, 1, 1_000)).toBe(1_000);
    expect(nextDelay(30_000, 1, 2_000)).toBe(2_000);
    expect(nextDelay(200, 1, 0)).toBe(1_000);
    expect(nextDelay(200, 1, 10 * 3_600_000)).toBe(3_600_000);
    expect(nextDelay(7_200_000, 1, 3 * 3_600_000)).toBe(7_200_000);
  });
});
