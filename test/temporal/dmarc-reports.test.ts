import { readFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DmarcReport, Event, InboxMessage } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { expectError, apiClient } from '../support/http.ts';
import { idem } from '../support/api.ts';
import { decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { startWebhookReceiver } from '../support/webhook-receiver.ts';
import { startInboundHarness, type InboundHarness } from './inbound-harness.ts';

const fixture = (name: string) => readFileSync(new URL(`../fixtures/dmarc/${name}`, import.meta.url));

/** A report mail as reporters send it: a short text part and the report attached. */
function reportMail(to: string, filename: string, content: Buffer, contentType: string) {
  return {
    from: 'noreply-dmarc@reporter.example',
    to,
    subject: `Report Domain: example.com Submitter: reporter.example Report-ID: ${filename}`,
    text: 'This is an aggregate report.',
    attachments: [{ filename, content, contentType }],
  };
}

/**
 * DMARC aggregate reports over the real inbound path: SMTP on loopback → blob store → the
 * inbound actor on Temporal → the worker's ingestion → the API read. The workspace owns the
 * verified `example.com`, the domain the public samples report on.
 */
describe('DMARC aggregate reports (real SMTP → worker → API)', () => {
  let h: InboundHarness;
  let api: RunningApi;
  let request: ReturnType<typeof apiClient>;
  let domainId: string;

  beforeAll(async () => {
    h = await startInboundHarness();
    const domains = createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey });
    domainId = (await domains.addDomain({ orgId: h.orgId, domain: 'example.com', verified: true })).id;
    await domains.addDomain({ orgId: h.orgId, domain: 'pending.example', verified: false });
    api = await startApi(h.stack.config, createLogger('silent'));
    const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
      orgId: h.orgId,
      scopes: ['all'],
      rateLimitPerMinute: 100_000,
      burst: 10_000,
    });
    request = apiClient(api.url, key);
    await h.startWorker();
  }, 120_000);

  afterAll(async () => {
    await api?.close();
    await h?.close();
  });

  async function deliver(mail: Parameters<InboundHarness['send']>[0]): Promise<string> {
    const id = await h.send(mail);
    const row = await h.ended(id);
    expect(row.status, row.lastError ?? '').toBe('ingested');
    return id;
  }

  it('refuses the report address of a pending domain at RCPT, like any of its addresses', async () => {
    const transport = createTransport({ host: '127.0.0.1', port: h.smtp.port, secure: false, ignoreTLS: true });
    const refused = await transport.sendMail(reportMail('dmarc@pending.example', 'outlook.xml', fixture('outlook.xml'), 'text/xml')).then(
      () => null,
      (error: { responseCode?: number }) => error,
    );
    expect(refused?.responseCode).toBe(550);
  });

  it('stores XML, gzip and zip reports sent to dmarc@ once each, and sums them per source address', async () => {
    const outlook = await deliver(reportMail('dmarc@example.com', 'outlook.xml', fixture('outlook.xml'), 'text/xml'));
    await deliver(reportMail('DMARC@example.com', 'usssa.xml.gz', gzipSync(fixture('usssa-two-records.xml')), 'application/gzip'));
    await deliver(reportMail('dmarc@example.com', 'infonacot.xml.zip', fixture('infonacot-zip.xml.zip'), 'application/zip'));
    // The same report again (reporters resend), and a report about another domain (FastMail's, on indemed.com).
    await deliver(reportMail('dmarc@example.com', 'outlook-again.xml', fixture('outlook.xml'), 'text/xml'));
    await deliver(reportMail('dmarc@example.com', 'fastmail.xml.gz', fixture('fastmail-gzip.xml.gz'), 'application/gzip'));

    const stored = await h.stack.orm.em.fork().find(DmarcReport, { domainId }, { ...ALL_TENANTS, orderBy: { reportId: 'asc' } });
    expect(stored.map((r) => [r.reporterOrg, r.reportId, r.inboundId === outlook ? 'first' : 'later'])).toEqual([
      ['XYZ Corporation', '2940', 'later'],
      ['usssa.com', '8953b4d4a4ee4218b6ac0e2cb2667ee1', 'later'],
      ['Outlook.com', 'cfeafefe4129445e8c81018bd9177197', 'first'],
    ]);
    // Reports are not inbox messages; the one about another domain, taken by none, is.
    const inboxed = await h.inbox().find(InboxMessage, { kind: 'message', subject: { $like: 'Report Domain:%' } });
    expect(inboxed.map((m) => m.subject)).toEqual(['Report Domain: example.com Submitter: reporter.example Report-ID: fastmail.xml.gz']);

    const reports = await request('GET', `/api/v1/domains/${domainId}/dmarc/reports`);
    expect(reports.status, JSON.stringify(reports.body)).toBe(200);
    const first = (reports.body.data as Record<string, unknown>[]).find((r) => r.report_id === 'cfeafefe4129445e8c81018bd9177197');
    expect(first).toMatchObject({
      domain_id: domainId,
      reporter: { org_name: 'Outlook.com', email: 'dmarcreport@microsoft.com' },
      policy_domain: 'example.com',
      policy_published: { adkim: 'r', aspf: 'r', p: 'none', sp: 'none', pct: 100 },
      date_range: { begin: '2024-03-30T00:00:00.000Z', end: '2024-03-31T00:00:00.000Z' },
      record_count: 1,
      message_count: 1,
    });

    const since = '2018-01-01T00:00:00Z';
    const page1 = await request('GET', `/api/v1/domains/${domainId}/dmarc/sources?since=${since}&limit=2`);
    expect(page1.status, JSON.stringify(page1.body)).toBe(200);
    const pagination = (page1.body.meta as { pagination: { has_more: boolean; next_cursor: string } }).pagination;
    expect(pagination.has_more).toBe(true);
    const page2 = await request('GET', `/api/v1/domains/${domainId}/dmarc/sources?since=${since}&limit=2&cursor=${pagination.next_cursor}`);
    expect(page2.status, JSON.stringify(page2.body)).toBe(200);
    const sources = [...(page1.body.data as Record<string, unknown>[]), ...(page2.body.data as Record<string, unknown>[])];
    expect(sources.map((s) => s.source_ip)).toEqual(['100.24.188.149', '12.20.127.40', '148.243.137.254', '199.230.200.36']);
    expect(sources[0]).toMatchObject({
      messages: 1,
      dmarc_pass: 0,
      dmarc_fail: 1,
      dkim_aligned_pass: 0,
      spf_aligned_pass: 0,
      quarantined: 0,
      rejected: 0,
      reporting_orgs: ['Outlook.com'],
      last_seen_at: '2024-03-31T00:00:00.000Z',
    });

    // The default window (30 days) holds none of these old reports.
    const recent = await request('GET', `/api/v1/domains/${domainId}/dmarc/sources`);
    expect(recent.body.data).toEqual([]);
  });

  it('answers 400 for a bad since and 404 for a domain of another workspace', async () => {
    expectError(await request('GET', `/api/v1/domains/${domainId}/dmarc/sources?since=yesterday`), 400, 'invalid_request');
    expectError(await request('GET', `/api/v1/domains/${'a'.repeat(24)}/dmarc/reports`), 404, 'not_found');
  });

  it('keeps mail to the report address that holds no report in the inbox', async () => {
    const id = await deliver({ from: 'person@remote.example', to: 'dmarc@example.com', subject: 'Question about DMARC', text: 'hello' });
    expect((await h.settled(id)).subject).toBe('Question about DMARC');
  });

  it('receives reports at a changed local part, and tells what to publish', async () => {
    const changed = await request('PATCH', `/api/v1/domains/${domainId}/dmarc`, {
      body: { report_local_part: 'Reports' },
      headers: idem(),
    });
    expect(changed.status, JSON.stringify(changed.body)).toBe(200);
    expect(changed.body.data).toMatchObject({
      report_address: 'reports@example.com',
      is_default_address: false,
      rua: 'rua=mailto:reports@example.com',
    });
    const bad = await request('PATCH', `/api/v1/domains/${domainId}/dmarc`, { body: { report_local_part: 'a,b' }, headers: idem() });
    expectError(bad, 400, 'invalid_request');

    // The Outlook.com sample as a report of yesterday, so it falls in the default 30-day window.
    const now = Math.floor(Date.now() / 1000);
    const xml = fixture('outlook.xml')
      .toString('utf8')
      .replace('cfeafefe4129445e8c81018bd9177197', 'changed-address-report')
      .replace('<begin>1711756800</begin>', `<begin>${now - 86_400}</begin>`)
      .replace('<end>1711843200</end>', `<end>${now}</end>`);
    await deliver(reportMail('reports@example.com', 'changed.xml', Buffer.from(xml), 'text/xml'));
    const listed = await request('GET', `/api/v1/domains/${domainId}/dmarc/reports?limit=1`);
    expect((listed.body.data as { report_id: string }[])[0]?.report_id).toBe('changed-address-report');

    const reset = await request('PATCH', `/api/v1/domains/${domainId}/dmarc`, { body: { report_local_part: 'dmarc' }, headers: idem() });
    expect(reset.body.data).toMatchObject({ report_address: 'dmarc@example.com', is_default_address: true });
    const recent = await request('GET', `/api/v1/domains/${domainId}/dmarc/sources`);
    expect((recent.body.data as { source_ip: string }[]).map((s) => s.source_ip)).toEqual(['100.24.188.149']);
  });

  it('emits domain.dmarc_report_received to a subscribed webhook endpoint once per stored report, with its sums', async () => {
    const receiver = await startWebhookReceiver();
    try {
      const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({ orgId: h.orgId, scopes: ['all'], mode: 'test' });
      const hook = await apiClient(api.url, key)('POST', '/api/v1/webhooks', {
        headers: idem(),
        body: { name: 'dmarc', url: receiver.url('/dmarc'), events: ['domain.dmarc_report_received'] },
      });
      expect(hook.status, JSON.stringify(hook.body)).toBe(201);
      // usssa's sample under a fresh report id, its first address passing DKIM aligned, its second 3 messages quarantined.
      const xml = fixture('usssa-two-records.xml')
        .toString('utf8')
        .replace('8953b4d4a4ee4218b6ac0e2cb2667ee1', 'webhook-report-1')
        .replace('<dkim>fail</dkim>', '<dkim>pass</dkim>')
        .replace(
          /(199\.230\.200\.36<\/source_ip>\s*<count>)1(<\/count>\s*<policy_evaluated>\s*<disposition>)none/,
          (_, count: string, disposition: string) => `${count}3${disposition}quarantine`,
        );
      expect(xml).toContain('<disposition>quarantine</disposition>');
      await deliver(reportMail('dmarc@example.com', 'hook.xml.gz', gzipSync(Buffer.from(xml)), 'application/gzip'));
      // The same report again: stored before, so no second event.
      await deliver(reportMail('dmarc@example.com', 'hook-again.xml.gz', gzipSync(Buffer.from(xml)), 'application/gzip'));
      const stored = await h.stack.orm.em.fork().find(Event, { type: 'domain.dmarc_report_received' }, ALL_TENANTS);
      expect(stored.filter((e) => (e.data as { report_id?: string }).report_id === 'webhook-report-1')).toHaveLength(1);

      const [request] = await receiver.waitForRequests('/dmarc', 1);
      const event = JSON.parse(request!.body) as { type: string; data: Record<string, unknown> };
      expect(event.type).toBe('domain.dmarc_report_received');
      const report = await h.stack.orm.em.fork().findOneOrFail(DmarcReport, { reportId: 'webhook-report-1' }, ALL_TENANTS);
      expect(event.data).toEqual({
        domain_id: domainId,
        domain: 'example.com',
        dmarc_report_id: report.id,
        reporter: { org_name: report.reporterOrg, email: report.reporterEmail },
        report_id: 'webhook-report-1',
        policy_domain: 'example.com',
        date_range: { begin: report.dateBegin.toISOString(), end: report.dateEnd.toISOString() },
        record_count: 2,
        message_count: 4,
        dmarc_pass: 1,
        dmarc_fail: 3,
        dkim_aligned_pass: 1,
        spf_aligned_pass: 0,
        quarantined: 3,
        rejected: 0,
        received_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      });
      expect(report.reporterOrg).toBe('usssa.com');
      expect(report.dateBegin.toISOString()).toBe('2018-10-06T00:00:00.000Z');
    } finally {
      await receiver.close();
    }
  });

  it('shows who sends as the domain on its dashboard page, and what to publish before the first report', async () => {
    const fresh = await createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey }).addDomain({
      orgId: h.orgId,
      domain: 'fresh.example',
      verified: true,
    });
    const { client } = await signedInPerson(h.stack.orm, api.url, h.orgId, { email: 'dmarc-reader@example.com' });
    const domainPage = await client.get(`/dashboard/domains/${domainId}`);
    expect(domainPage.text).toContain(`href="/dashboard/domains/${domainId}/dmarc"`);

    const page = await client.get(`/dashboard/domains/${domainId}/dmarc`);
    expect(page.status, page.text.slice(0, 500)).toBe(200);
    expect(page.text).toContain('Who sends as example.com');
    expect(page.text).toMatch(/<code>100\.24\.188\.149<\/code><\/td><td><span class="state attention">fails<\/span>/);
    expect(page.text).toContain('XYZ Corporation');

    const empty = await client.get(`/dashboard/domains/${fresh.id}/dmarc`);
    expect(empty.text).toContain('No reports yet');
    expect(decodeEntities(empty.text)).toContain('rua=mailto:dmarc@fresh.example');

    const other = await createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey }).addDomain({
      orgId: h.otherOrgId,
      domain: 'elsewhere.example',
      verified: true,
    });
    expect((await client.get(`/dashboard/domains/${other.id}/dmarc`)).status).toBe(404);
  });
});
