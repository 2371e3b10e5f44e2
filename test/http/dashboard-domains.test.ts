import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { MAX_DOMAINS_PER_WORKSPACE } from '../../src/modules/domains/domains.service.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { csrfOf, dashboardClient, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';

/** Text as the pages' templates escape it (ghtml: " & ' < = > as numeric references). */
const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

/** The dashboard's domains pages: the list, adding a domain (the domains service's rules), a domain's records and status. */
describe('the dashboard: domains', () => {
  let h: ApiHarness;
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const domainName = (prefix = 'dash') => `${unique(prefix).toLowerCase()}.example.com`;
  const domainsOf = (orgId: string) => h.stack.orm.em.fork().find(Domain, { orgId }, ALL_TENANTS);
  const signIn = async (orgId = h.workspace.org.id) => (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: email() })).client;

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers no domains page without a session (303 to sign-in) and adds nothing', async () => {
    const own = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    const client = dashboardClient(h.api.url);
    for (const path of ['/dashboard/domains', `/dashboard/domains/${own.id}`]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
    const before = (await domainsOf(h.workspace.org.id)).length;
    const posted = await client.post('/dashboard/domains', { _csrf: 'x', domain: domainName() });
    expect(posted.status).toBe(303);
    expect(posted.headers.get('location')).toBe('/dashboard/sign-in');
    expect(await domainsOf(h.workspace.org.id)).toHaveLength(before);
  });

  it("lists the workspace's domains with their status, and not another workspace's", async () => {
    const { org } = await createOrg(h.stack.orm);
    const verified = await addSendingDomain(h.stack.orm, org.id, { domain: domainName('verified') });
    const attention = await addSendingDomain(h.stack.orm, org.id, { domain: domainName('attention'), status: 'attention' });
    const foreign = await addSendingDomain(h.stack.orm, h.workspace.org.id, { domain: domainName('foreign') });
    const page = await (await signIn(org.id)).get('/dashboard/domains');
    expect(page.status).toBe(200);
    expect(page.text).toContain('aria-current="page">Domains<');
    expect(page.text).toMatch(
      new RegExp(`href="/dashboard/domains/${verified.id}">${verified.domain}</a>[\\s\\S]*?<span class="state verified">verified</span>`),
    );
    expect(page.text).toMatch(
      new RegExp(
        `href="/dashboard/domains/${attention.id}">${attention.domain}</a>[\\s\\S]*?<span class="state attention">attention</span>`,
      ),
    );
    expect(page.text).not.toContain(foreign.domain);
    // Accessible: a labelled input and column headers.
    expect(page.text).toContain('<label for="domain-name">Domain name</label>');
    expect(page.text).toContain('<th scope="col">Status</th>');
  });

  it('adds a domain and shows its DNS records, each with a copy button, and its pending status (the page reloads itself)', async () => {
    const client = await signIn();
    const name = domainName('added');
    const added = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: `  ${name.toUpperCase()}. ` });
    expect(added.status).toBe(303);
    const row = (await domainsOf(h.workspace.org.id)).find((d) => d.domain === name);
    expect(row).toMatchObject({ status: 'pending' });
    expect(added.headers.get('location')).toBe(`/dashboard/domains/${row!.id}?added=1`);

    const page = await client.get(added.headers.get('location')!);
    expect(page.status).toBe(200);
    expect(page.text).toContain(`${name} was added.`);
    expect(page.text).toContain(`<title>${name} · Herald</title>`);
    expect(page.text).toContain('<span class="state pending">pending</span>');
    expect(page.text).toContain(`herald admin domain verify ${row!.id}`);
    expect(page.headers.get('refresh')).toBe('30');
    const records: [string, string, string][] = [
      ['spf', name, `v=spf1 include:${h.stack.config.spfInclude} ~all`],
      ['dkim', `herald._domainkey.${name}`, dkimDnsValue(row!.dkimPublicKey)],
      ['dmarc', `_dmarc.${name}`, 'v=DMARC1; p=none'],
      ['return-path', `bounces.${name}`, h.stack.config.bounceDomain],
    ];
    for (const [key, host, value] of records) {
      expect(page.text).toContain(`<code id="record-${key}-host">${host}</code><button type="button" data-copy="record-${key}-host"`);
      expect(page.text).toContain(
        `<code id="record-${key}-value">${escaped(value)}</code><button type="button" data-copy="record-${key}-value"`,
      );
    }
    expect(page.text).toMatch(/<td data-label="Type"><code>CNAME<\/code><\/td>/);
    // The list shows it, pending; reloading can be turned off.
    expect((await client.get('/dashboard/domains')).text).toMatch(
      new RegExp(`${name}</a>[\\s\\S]*?<span class="state pending">pending</span>`),
    );
    const still = await client.get(`/dashboard/domains/${row!.id}?reload=off`);
    expect(still.headers.get('refresh')).toBeNull();
    expect(still.text).toContain('Reload the status');
  });

  it('shows a verified domain as verified, without reloading', async () => {
    const domain = await addSendingDomain(h.stack.orm, h.workspace.org.id, { domain: domainName('done') });
    const page = await (await signIn()).get(`/dashboard/domains/${domain.id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<span class="state verified">verified</span>');
    expect(page.text).toContain('Verified on');
    expect(page.headers.get('refresh')).toBeNull();
  });

  it('refuses an invalid domain or one this workspace has (400, 409), keeping what was typed', async () => {
    const client = await signIn();
    const before = (await domainsOf(h.workspace.org.id)).length;
    const invalid = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: 'not a domain' });
    expect(invalid.status).toBe(400);
    expect(invalid.text).toContain(`<p class="error" role="alert">${escaped('"not a domain" is not a valid domain name')}</p>`);
    expect(invalid.text).toContain('value="not a domain"');
    const empty = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: '' });
    expect(empty.status).toBe(400);
    expect(empty.text).toContain('is not a valid domain name');

    const own = await addSendingDomain(h.stack.orm, h.workspace.org.id, { domain: domainName('own') });
    const conflict = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: own.domain });
    expect(conflict.status).toBe(409);
    expect(conflict.text).toContain(`domain ${own.domain} is already in this workspace`);
    expect(await domainsOf(h.workspace.org.id)).toHaveLength(before + 1);
  });

  it('adds a domain another workspace holds exactly as any new one (pending), never saying so; it receives nothing and does not verify here', async () => {
    const client = await signIn();
    const { org } = await createOrg(h.stack.orm);
    const taken = await addSendingDomain(h.stack.orm, org.id, { domain: domainName('taken') });
    const fresh = domainName('fresh');
    const answers = [];
    for (const name of [taken.domain, fresh]) {
      const added = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: name });
      expect(added.status, added.text).toBe(303);
      answers.push(added.headers.get('location')!.replace(/[0-9a-f]{24}/, '<id>'));
    }
    expect(answers[0]).toBe(answers[1]);
    const mine = (await domainsOf(h.workspace.org.id)).find((d) => d.domain === taken.domain)!;
    expect(mine.status).toBe('pending');
    const page = await client.get(`/dashboard/domains/${mine.id}`);
    expect(page.text).not.toContain('another workspace');
    // The other workspace keeps it, verified.
    expect((await h.stack.orm.em.fork().findOneOrFail(Domain, { id: taken.id }, ALL_TENANTS)).status).toBe('verified');
  });

  it(`holds at most ${MAX_DOMAINS_PER_WORKSPACE} domains per workspace: the last one is added, the next refused (400) before any key is made`, async () => {
    const { org } = await createOrg(h.stack.orm);
    const template = await addSendingDomain(h.stack.orm, org.id, { domain: domainName('first') });
    const em = h.stack.orm.em.fork();
    for (let i = 1; i < MAX_DOMAINS_PER_WORKSPACE - 1; i += 1) {
      em.create(Domain, {
        orgId: org.id,
        domain: domainName('bulk'),
        status: 'pending',
        dkimPublicKey: template.dkimPublicKey,
        dkimPrivateKeyEncrypted: template.dkimPrivateKeyEncrypted,
        dailyCap: null,
        verifiedAt: null,
        lastCheckedAt: null,
        drainLeaseUntil: null,
      });
    }
    await em.flush();
    const client = await signIn(org.id);
    const last = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: domainName('last') });
    expect(last.status, last.text).toBe(303);
    expect(await domainsOf(org.id)).toHaveLength(MAX_DOMAINS_PER_WORKSPACE);
    const over = await client.submit('/dashboard/domains', '/dashboard/domains', { domain: domainName('over') });
    expect(over.status).toBe(400);
    expect(over.text).toContain(`a workspace holds at most ${MAX_DOMAINS_PER_WORKSPACE} domains`);
    expect(await domainsOf(org.id)).toHaveLength(MAX_DOMAINS_PER_WORKSPACE);
  });

  it("needs the session's CSRF token and this origin to add a domain", async () => {
    const client = await signIn();
    const before = (await domainsOf(h.workspace.org.id)).length;
    expect((await client.post('/dashboard/domains', { domain: domainName() })).status).toBe(403);
    expect((await client.post('/dashboard/domains', { domain: domainName(), _csrf: 'forged' })).status).toBe(403);
    expect(
      (await client.submit('/dashboard/domains', '/dashboard/domains', { domain: domainName() }, { origin: 'https://evil.example' }))
        .status,
    ).toBe(403);
    const other = await signIn();
    const othersToken = csrfOf((await other.get('/dashboard/domains')).text);
    expect((await client.post('/dashboard/domains', { domain: domainName(), _csrf: othersToken })).status).toBe(403);
    expect(await domainsOf(h.workspace.org.id)).toHaveLength(before);
  });

  it("answers 404 for another workspace's domain or an id that is none", async () => {
    const { org } = await createOrg(h.stack.orm);
    const foreign = await addSendingDomain(h.stack.orm, org.id, { domain: domainName('elsewhere') });
    const client = await signIn();
    for (const path of [`/dashboard/domains/${foreign.id}`, '/dashboard/domains/000000000000000000000000', '/dashboard/domains/nope']) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text, path).toContain('This workspace has no such domain.');
      expect(page.text, path).not.toContain(foreign.domain);
    }
  });
});
