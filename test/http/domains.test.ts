import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDnsResolver } from '../../src/dns/resolver.ts';
import { createDomainVerification } from '../../src/modules/domains/domain-verification.service.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError } from '../support/http.ts';

interface DomainOption {
  _id: string;
  domain: string;
  verified: boolean;
  isDefault: boolean;
  domainSource: string;
  deliverability: Record<string, unknown> & { status: string; last_checked_at: string | null };
  sender_options: { id: string; name: string; email: string; is_default: boolean; verified: boolean }[];
}

describe('GET /api/v1/domains', () => {
  let h: ApiHarness;
  let dns: TestDnsServer;
  let domains: ReturnType<typeof createDomainsService>;
  const tld = `${process.pid}.example`;

  beforeAll(async () => {
    dns = await startDnsServer();
    h = await startApiHarness({ SPF_INCLUDE: 'spf.herald.test', BOUNCE_DOMAIN: 'bounces.herald.test' });
    domains = createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey });
  });
  afterAll(async () => {
    await h.close();
    await dns.close();
  });

  async function list(request = h.request): Promise<DomainOption[]> {
    const response = await request('GET', '/api/v1/domains');
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    expect(response.body.meta).not.toHaveProperty('pagination');
    return response.body.data as DomainOption[];
  }

  it('answers an empty array for a workspace without domains', async () => {
    const empty = await createOrgWithKey(h.stack.orm, { scopes: ['domains:read'] });
    expect(await list(apiClient(h.api.url, empty.key))).toEqual([]);
  });

  it('lists the domains of the workspace with their records to publish and sender options, default first', async () => {
    const orgId = h.workspace.org.id;
    const first = await domains.addDomain({ orgId, domain: `zeta.${tld}` });
    const second = await domains.addDomain({ orgId, domain: `alpha.${tld}`, verified: true });
    const hello = await domains.addSender({ domainId: first.id, email: `hello@zeta.${tld}`, name: 'Zeta' });
    const billing = await domains.addSender({ domainId: first.id, email: `billing@zeta.${tld}`, name: 'Billing' });
    const news = await domains.addSender({ domainId: second.id, email: `news@alpha.${tld}`, name: 'Alpha News' });

    const data = await list();
    expect(data.map((d) => d.domain)).toEqual([`zeta.${tld}`, `alpha.${tld}`]);
    const record = (type: string, name: string, value: string, required: boolean) => ({
      type,
      name,
      value,
      required,
      status: 'unknown',
      found: null,
    });
    expect(data[0]).toEqual({
      _id: first.id,
      domain: `zeta.${tld}`,
      verified: false,
      isDefault: true,
      domainSource: 'operator',
      ip_pool: null,
      warmup: expect.objectContaining({ mode: expect.any(String), plan: expect.any(Object) }),
      deliverability: {
        status: 'pending',
        last_checked_at: null,
        spf: record('TXT', `zeta.${tld}`, 'v=spf1 include:spf.herald.test ~all', true),
        dkim: record('TXT', `herald._domainkey.zeta.${tld}`, dkimDnsValue(first.dkimPublicKey), true),
        dmarc: record('TXT', `_dmarc.zeta.${tld}`, 'v=DMARC1; p=none', false),
        return_path: record('CNAME', `bounces.zeta.${tld}`, 'bounces.herald.test', true),
      },
      sender_options: [
        { id: hello.id, name: 'Zeta', email: `hello@zeta.${tld}`, is_default: true, verified: false },
        { id: billing.id, name: 'Billing', email: `billing@zeta.${tld}`, is_default: false, verified: false },
      ],
    });
    expect(data[0]!.deliverability.dkim).toMatchObject({ value: expect.stringMatching(/^v=DKIM1; k=rsa; p=[A-Za-z0-9+/]{300,}={0,2}$/) });
    expect(data[1]).toMatchObject({
      _id: second.id,
      verified: true,
      isDefault: false,
      deliverability: { status: 'verified', last_checked_at: null },
      sender_options: [{ id: news.id, name: 'Alpha News', email: `news@alpha.${tld}`, is_default: true, verified: true }],
    });
  });

  it('orders non-default domains by name', async () => {
    const names = (await list()).filter((d) => !d.isDefault).map((d) => d.domain);
    expect(names).toEqual([...names].sort());
    await domains.addDomain({ orgId: h.workspace.org.id, domain: `middle.${tld}` });
    expect((await list()).map((d) => d.domain)).toEqual([`zeta.${tld}`, `alpha.${tld}`, `middle.${tld}`]);
  });

  it('shows what the last DNS check found', async () => {
    const orgId = h.workspace.org.id;
    const domain = await domains.addDomain({ orgId, domain: `checked.${tld}` });
    dns.set(`checked.${tld}`, { TXT: ['v=spf1 include:other.example ~all'] });
    dns.set(`herald._domainkey.checked.${tld}`, { TXT: [dkimDnsValue(domain.dkimPublicKey)] });
    dns.set(`bounces.checked.${tld}`, { CNAME: 'bounces.herald.test' });
    const verification = createDomainVerification({
      orm: h.stack.orm,
      dns: createDnsResolver({ dns: { servers: [dns.address], timeoutMs: 300 } }),
      settings: h.stack.config,
    });
    const outcome = await verification.checkDomain(orgId, domain.id);
    expect(outcome).toMatchObject({ previousStatus: 'pending', status: 'pending' });

    const shown = (await list()).find((d) => d._id === domain.id)!;
    expect(shown.verified).toBe(false);
    expect(shown.deliverability).toMatchObject({
      status: 'pending',
      last_checked_at: outcome!.checkedAt,
      spf: { status: 'mismatch', found: 'v=spf1 include:other.example ~all' },
      dkim: { status: 'verified', found: dkimDnsValue(domain.dkimPublicKey) },
      dmarc: { status: 'missing', found: null },
      return_path: { status: 'verified', found: 'bounces.herald.test' },
    });
  });

  it("never shows another workspace's domains", async () => {
    const other = await createOrgWithKey(h.stack.orm, { scopes: ['domains:read'] });
    const theirs = await domains.addDomain({ orgId: other.org.id, domain: `${unique('theirs').toLowerCase()}.example` });
    await domains.addSender({ domainId: theirs.id, email: `team@${theirs.domain}`, name: 'Theirs' });
    const mine = await list();
    expect(mine.map((d) => d._id)).not.toContain(theirs.id);
    expect(JSON.stringify(mine)).not.toContain(theirs.domain);
    const seenByThem = await list(apiClient(h.api.url, other.key));
    expect(seenByThem.map((d) => d._id)).toEqual([theirs.id]);
    expect(seenByThem[0]!.sender_options.map((s) => s.email)).toEqual([`team@${theirs.domain}`]);
  });

  it('needs the domains:read scope', async () => {
    const narrow = await createOrgWithKey(h.stack.orm, { scopes: ['me:read'] });
    expectError(await apiClient(h.api.url, narrow.key)('GET', '/api/v1/domains'), 403, 'missing_scope');
    expectError(await h.request('GET', '/api/v1/domains', { key: null }), 401, 'invalid_api_key');
  });
});
