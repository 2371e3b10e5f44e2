import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Domain } from '../../db/entities/index.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { expectError } from '../support/http.ts';
import { sendRaw } from '../support/raw-request.ts';
import { addSendingDomain } from '../support/sending.ts';

interface TrackingDomain {
  domain_id: string;
  host: string | null;
  cname_target: string;
  status: 'none' | 'pending' | 'verified';
  found: string | null;
  verified_at: string | null;
}

/** A pixel token that verifies nothing: the pixel is served all the same where the host may serve it. */
const PIXEL_PATH = `/t/o/${'0'.repeat(24)}.AAAAAAAAAAAAAAAAAAAAAA.gif`;

describe('PATCH /api/v1/domains/:id/tracking', () => {
  let h: ApiHarness;
  let dns: TestDnsServer;
  let domain: Domain;

  beforeAll(async () => {
    dns = await startDnsServer();
    h = await startApiHarness({ DNS_SERVERS: dns.address, DNS_TIMEOUT_MS: '300' });
    domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
  });
  afterAll(async () => {
    await h.close();
    await dns.close();
  });

  const setHost = (domainId: string, host: string | null) =>
    h.request('PATCH', `/api/v1/domains/${domainId}/tracking`, { headers: idem(), body: { host } });
  const pixelOn = (host: string) => sendRaw({ method: 'GET', url: `${h.api.url}${PIXEL_PATH}`, headers: { host }, body: Buffer.alloc(0) });

  it('keeps a host without its CNAME pending, verifies it once the CNAME points at PUBLIC_URL host, and serves tracking on it', async () => {
    const host = `track.${domain.domain}`;
    const pending = await setHost(domain.id, host.toUpperCase());
    expect(pending.status, JSON.stringify(pending.body)).toBe(200);
    expect(pending.body.data).toMatchObject({
      domain_id: domain.id,
      host,
      cname_target: 'herald.test',
      status: 'pending',
      verified_at: null,
    });

    dns.set(host, { CNAME: 'herald.test' });
    const checked = await h.request('POST', `/api/v1/domains/${domain.id}/tracking/check`, { headers: idem() });
    expect(checked.status, JSON.stringify(checked.body)).toBe(200);
    const data = checked.body.data as TrackingDomain;
    expect(data).toMatchObject({ host, status: 'verified', found: 'herald.test' });
    expect(data.verified_at).not.toBeNull();

    const served = await pixelOn(host);
    expect(served.status).toBe(200);
    expect(served.headers.get('content-type')).toBe('image/gif');
  });

  it('refuses tracking paths on a host nobody verified, and serves them on Herald own host', async () => {
    const other = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const host = `links.${other.domain}`;
    dns.set(host, { CNAME: 'elsewhere.example' });
    expect((await setHost(other.id, host)).body.data).toMatchObject({ status: 'pending', found: 'elsewhere.example' });
    expect((await pixelOn(host)).status).toBe(404);
    expect((await pixelOn('unknown.example')).status).toBe(404);
    const click = await sendRaw({
      method: 'GET',
      url: `${h.api.url}/t/c/x?u=https%3A%2F%2Fa.example`,
      headers: { host: 'unknown.example' },
      body: Buffer.alloc(0),
    });
    expect(click.status).toBe(404);
    expect((await pixelOn('herald.test')).status).toBe(200);
  });

  it('removes the host with null; its links fall back to PUBLIC_URL', async () => {
    const third = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    dns.set(`t.${third.domain}`, { CNAME: 'herald.test' });
    expect((await setHost(third.id, `t.${third.domain}`)).body.data).toMatchObject({ status: 'verified' });
    const removed = await setHost(third.id, null);
    expect(removed.body.data).toMatchObject({ host: null, status: 'none', verified_at: null });
  });

  it.each([
    ['not a host name', 'not a host'],
    ['a host outside the domain', 'track.elsewhere.example'],
    ['the domain itself', null],
  ])('answers 400 invalid_request for %s', async (_, host) => {
    const response = await setHost(domain.id, host ?? domain.domain);
    expectError(response, 400, 'invalid_request');
    expect(response.body.error?.details).toMatchObject({ reason: 'INVALID_TRACKING_HOST', fields: [{ path: 'host', location: 'body' }] });
  });

  it('answers 400 for a body without host and 404 for a domain of no workspace of the key', async () => {
    expectError(await h.request('PATCH', `/api/v1/domains/${domain.id}/tracking`, { headers: idem(), body: {} }), 400, 'invalid_request');
    expectError(await setHost('0123456789abcdef01234567', `track.${domain.domain}`), 404, 'not_found');
  });
});
