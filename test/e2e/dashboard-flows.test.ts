import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Client } from '@temporalio/client';
import { createTransport, type SentMessageInfo } from 'nodemailer';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, InboxMessage } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startSmtp } from '../../src/main-smtp.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { apiClient } from '../support/http.ts';
import { joinByInvitation, launchBrowser, newPage, screenshot } from '../support/browser.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';
import type { DeliveryRecord } from '../support/webhook-rows.ts';

const SPF_INCLUDE = 'spf.herald.test';
const BOUNCE_DOMAIN = 'bounces.herald.test';
/** Three attempts 200 ms apart, then exhausted. */
const WEBHOOK_RETRY_SCHEDULE = '0s,200ms,200ms';
/** How long the pipeline gets to show a result on a loaded machine. */
const DEADLINE_MS = 60_000;
/** A flow's own limit: its waits on the pipeline, and the browser's steps around them. */
const TEST_TIMEOUT_MS = 180_000;

/**
 * The dashboard's acceptance flows as a person goes through them, in headless Chromium against a
 * real Herald: the api, the worker (Temporal's dev server from the global setup) and the SMTP
 * intake, with a loopback DNS server, a relay standing in for the provider and a customer's
 * webhook receiver. One stack and one signed-in page for the whole file; the flows run in order
 * (metrics last, after the others wrote their events).
 */
describe('dashboard flows in a browser, against the api, the worker and the SMTP intake', () => {
  let dns: TestDnsServer;
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let receiver: WebhookReceiver;
  let blobDir: string;
  let h: ApiHarness;
  let smtp: Awaited<ReturnType<typeof startSmtp>>;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let client: Client;
  let browser: Browser;
  let page: Page;
  let orgId: string;
  let sendingDomain: Domain;
  let emailDelivered = false;
  const tld = `p${process.pid}.example`;
  const logger = createLogger('warn');
  const mail = { MX: [{ exchange: 'mx.example.net', priority: 10 }] };

  /** Reloads the page until `probe` holds (the pages are server-rendered: reloading is how a person sees progress). */
  async function reloadUntil(probe: () => Promise<boolean>, what: string): Promise<void> {
    await expect
      .poll(
        async () => {
          if (await probe()) return true;
          await page.reload();
          return probe();
        },
        { timeout: DEADLINE_MS, interval: 500, message: `${what} (on ${page.url()})` },
      )
      .toBe(true);
  }

  beforeAll(async () => {
    installTemporalLogging(logger);
    // The internet's DNS as the global setup's server answers it (recipients' domains receive mail), plus what the flows publish.
    dns = await startDnsServer({ 'example.com': mail, '*.example.com': mail, 'mx.example.net': { A: ['192.0.2.25'] } });
    relay = await startCountingRelay();
    receiver = await startWebhookReceiver();
    blobDir = await mkdtemp(join(tmpdir(), 'herald-dashboard-flows-'));
    h = await startApiHarness({
      DNS_SERVERS: dns.address,
      DNS_TIMEOUT_MS: '300',
      SPF_INCLUDE,
      BOUNCE_DOMAIN,
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_FINAL_HOP: 'true',
      BLOB_DIR: blobDir,
      WEBHOOK_RETRY_SCHEDULE,
      EMAIL_RETRY_SCHEDULE: '0s,300ms',
      EMAIL_RETRY_WINDOW: '5s',
    });
    orgId = h.workspace.org.id;
    temporal = await connectTemporalClient(h.stack.config);
    client = temporal.client;
    smtp = await startSmtp(h.stack.config, createLogger('silent'));
    worker = await startWorker(h.stack.config, logger);
    sendingDomain = await addSendingDomain(h.stack.orm, orgId, { domain: `mail.${tld}` });
    await setCredits(h.stack.orm, orgId, 100);

    browser = await launchBrowser();
    page = await newPage(browser);
    await joinByInvitation(
      page,
      { orm: h.stack.orm, apiUrl: h.api.url, orgId: orgId },
      { email: `flows-${process.pid}@example.com`, name: 'Ada Lovelace' },
    );
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    receiver?.releaseHanging();
    await worker?.shutdown();
    if (client && h) {
      for await (const schedule of client.schedule.list()) {
        if (schedule.scheduleId.startsWith(`${h.stack.config.temporal.schedulePrefix}-`)) {
          await client.schedule
            .getHandle(schedule.scheduleId)
            .delete()
            .catch(() => {});
        }
      }
    }
    await temporal?.close();
    await smtp?.close();
    await h?.close();
    await receiver?.close();
    await relay?.close();
    await dns?.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  it(
    'adds a domain, shows its DNS records with copy buttons, and verifies it with "Check now" once they are published',
    async () => {
      const name = `news.${tld}`;
      await page.goto(`${h.api.url}/dashboard/domains`);
      await page.getByLabel('Domain name').fill(name);
      await page.getByRole('button', { name: 'Add domain' }).click();
      await page.waitForURL(/\/dashboard\/domains\/[0-9a-f]{24}\?added=1$/);
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain(name);
      expect(await page.getByText(`${name} was added.`).count()).toBe(1);
      expect((await page.locator('.state.pending').first().textContent())?.trim()).toBe('pending');

      // Each record with a copy button for its host and its value.
      const records = { SPF: 'spf', DKIM: 'dkim', 'Return path': 'return-path', DMARC: 'dmarc' } as const;
      const shown: Record<string, { host: string; value: string; type: string }> = {};
      for (const [label, id] of Object.entries(records)) {
        const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${label}`) }) });
        expect(await row.count(), label).toBe(1);
        expect(await row.getByRole('button', { name: `Copy ${label} host` }).count()).toBe(1);
        expect(await row.getByRole('button', { name: `Copy ${label} value` }).count()).toBe(1);
        expect((await row.locator('.state').textContent())?.trim()).toBe('not checked');
        shown[id] = {
          host: (await page.locator(`#record-${id}-host`).textContent())?.trim() ?? '',
          value: (await page.locator(`#record-${id}-value`).textContent())?.trim() ?? '',
          type: (await row.locator('td code').first().textContent())?.trim() ?? '',
        };
      }
      const domain = await h.stack.orm.em.fork().findOneOrFail(Domain, { domain: name }, ALL_TENANTS);
      expect(page.url()).toContain(domain.id);
      expect(shown.spf).toEqual({ type: 'TXT', host: name, value: `v=spf1 include:${SPF_INCLUDE} ~all` });
      expect(shown.dkim).toMatchObject({ type: 'TXT', host: `herald._domainkey.${name}` });
      expect(shown.dkim!.value).toMatch(/^v=DKIM1; k=rsa; p=/);
      expect(shown['return-path']).toEqual({ type: 'CNAME', host: `bounces.${name}`, value: BOUNCE_DOMAIN });
      expect(shown.dmarc).toMatchObject({ type: 'TXT', host: `_dmarc.${name}` });

      // The DKIM value through its copy button, as a person takes it to their DNS provider.
      await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: h.api.url });
      await page.getByRole('button', { name: 'Copy DKIM value' }).click();
      await expect.poll(() => page.getByRole('button', { name: 'Copied' }).count()).toBe(1);
      const copied = await page.evaluate<string>('navigator.clipboard.readText()');
      expect(copied).toBe(shown.dkim!.value);

      // Published at the "DNS provider" exactly as the page shows them.
      dns.set(shown.spf!.host, { TXT: [shown.spf!.value], ...mail });
      dns.set(shown.dkim!.host, { TXT: [copied] });
      dns.set(shown['return-path']!.host, { CNAME: shown['return-path']!.value });
      dns.set(shown.dmarc!.host, { TXT: [shown.dmarc!.value] });

      await page.getByRole('button', { name: 'Check now' }).click();
      await page.waitForURL(/\?checked=1&reload=off$/, { timeout: 30_000 });
      expect(await page.getByText('Checked just now: verified.').count()).toBe(1);
      expect((await page.locator('#status-title + p .state').textContent())?.trim()).toBe('verified');
      for (const label of Object.keys(records)) {
        const row = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: new RegExp(`^${label}`) }) });
        expect((await row.locator('.state').textContent())?.trim(), label).toBe('found');
      }
      expect((await h.stack.orm.em.fork().findOneOrFail(Domain, { id: domain.id }, ALL_TENANTS)).status).toBe('verified');
      await screenshot(page, 'dashboard-domain');

      await page.getByRole('link', { name: '← All domains' }).click();
      const listed = page.getByRole('row').filter({ hasText: name });
      expect((await listed.locator('.state').textContent())?.trim()).toBe('verified');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'sends an email through the API and follows its timeline to delivered',
    async () => {
      const subject = `Your receipt ${process.pid}`;
      const recipient = `ada-${process.pid}@example.com`;
      // A live key: a test key's mail would stay in the sandbox, and this flow follows it to the relay.
      const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({ orgId, scopes: ['all'], mode: 'live' });
      const sent = await apiClient(h.api.url, key)('POST', '/api/v1/outbox/emails', {
        headers: idem(),
        body: { from: `Shop <shop@${sendingDomain.domain}>`, to: recipient, subject, text: 'Thank you for your order.' },
      });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      const email = sent.body.data as { _id: string; message_id: string };

      await page.goto(`${h.api.url}/dashboard/emails`);
      await page.getByLabel('Recipient').fill(recipient);
      await page.getByRole('button', { name: 'Filter' }).click();
      await page.waitForURL(/\/dashboard\/emails\?.*\bto=/);
      const row = page.getByRole('row').filter({ hasText: subject });
      expect(await row.count()).toBe(1);
      expect(await row.getByRole('cell', { name: recipient }).count()).toBe(1);
      await screenshot(page, 'dashboard-emails');

      await row.getByRole('link', { name: subject }).click();
      await page.waitForURL(new RegExp(`/dashboard/emails/${email._id}$`));
      expect(await page.getByRole('heading', { level: 1 }).textContent()).toContain(subject);
      expect(await page.getByText(email.message_id).count()).toBe(1);
      const timeline = page.locator('section.recipient').filter({ has: page.getByRole('heading', { name: new RegExp(recipient) }) });
      expect(await timeline.locator('.event.accepted').count()).toBe(1);
      const emailStatus = page.locator('dl.facts .state').first();
      await reloadUntil(
        async () => (await timeline.locator('.event.delivered').count()) === 1 && (await emailStatus.textContent())?.trim() === 'sent',
        'the timeline to reach delivered',
      );
      expect((await timeline.locator('h3 .state').textContent())?.trim()).toBe('delivered');
      expect(await timeline.locator('.event.sent').textContent()).toContain('Sent: the relay accepted it');
      expect(await timeline.locator('.event.delivered').textContent()).toContain('Delivered: the receiving server accepted it');
      // The relay's reply, as the remote server's diagnostic.
      expect(await timeline.locator('.diagnostic').textContent()).toContain('queued');
      expect(relay.accepted.get(email.message_id)).toBe(1);
      emailDelivered = true;
      await screenshot(page, 'dashboard-email');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'shows a failing webhook delivery with its attempts, and replays it from the page until delivered',
    async () => {
      receiver.respond('/crm', () => ({ status: 500, body: 'down for maintenance' }));
      const created = await h.request('POST', '/api/v1/webhooks', {
        headers: idem(),
        body: { name: 'CRM sync', url: receiver.url('/crm'), events: ['contact.created'] },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const endpointId = (created.body.data as { id: string }).id;
      const contact = await h.request('POST', '/api/v1/contacts', { headers: idem(), body: { email: `grace-${process.pid}@example.com` } });
      expect(contact.status, JSON.stringify(contact.body)).toBe(201);

      const exhausted = await waitFor(
        'the delivery to be exhausted',
        async () => {
          const list = await h.request('GET', '/api/v1/webhooks/deliveries');
          return (list.body.data as DeliveryRecord[]).find((d) => d.webhook_id === endpointId && d.status === 'exhausted');
        },
        DEADLINE_MS,
        100,
      );
      expect(receiver.requests('/crm')).toHaveLength(3);

      await page.goto(`${h.api.url}/dashboard/webhooks`);
      await page.getByRole('link', { name: 'CRM sync' }).click();
      await page.waitForURL(new RegExp(`/dashboard/webhooks/${endpointId}$`));
      const logRow = page.getByRole('row').filter({ has: page.getByRole('link', { name: 'contact.created' }) });
      expect(await logRow.count()).toBe(1);
      expect((await logRow.locator('.state').textContent())?.trim()).toBe('exhausted');
      expect((await logRow.getByRole('cell').nth(1).textContent())?.trim()).toBe('3');
      expect((await logRow.getByRole('cell').nth(2).textContent())?.trim()).toBe('500');
      await screenshot(page, 'dashboard-webhooks');

      await logRow.getByRole('link', { name: 'contact.created' }).click();
      await page.waitForURL(new RegExp(`/dashboard/webhooks/deliveries/${exhausted.id}$`));
      const attemptRows = page.locator('table tbody tr');
      expect(await attemptRows.count()).toBe(3);
      for (const n of [1, 2, 3]) {
        const attempt = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: `#${n}`, exact: true }) });
        expect((await attempt.getByRole('cell').nth(1).textContent())?.trim(), `attempt ${n}`).toBe('500');
        expect(await attempt.getByRole('cell').nth(4).textContent(), `attempt ${n}`).toContain('down for maintenance');
      }

      receiver.respond('/crm', () => ({ status: 200, body: 'thanks' }));
      await page.getByRole('button', { name: 'Replay' }).click();
      await page.waitForURL(/\?replayed=1$/);
      expect(await page.getByText('Replay queued').count()).toBe(1);
      const status = page.locator('dl.facts .state').first();
      await reloadUntil(async () => (await status.textContent())?.trim() === 'delivered', 'the replayed delivery to be delivered');
      const replayed = page.getByRole('row').filter({ has: page.getByRole('rowheader', { name: 'Replay 1, #1' }) });
      expect((await replayed.getByRole('cell').nth(1).textContent())?.trim()).toBe('200');
      expect(await replayed.getByRole('cell').nth(4).textContent()).toContain('thanks');
      expect(await page.getByText('replayed 1 time').count()).toBe(1);
      const requests = receiver.requests('/crm');
      expect(requests).toHaveLength(4);
      expect(requests[3]!.headers['herald-delivery-id']).toBe(exhausted.id);
      await screenshot(page, 'dashboard-delivery');
    },
    TEST_TIMEOUT_MS,
  );

  it(
    'reads an inbound message: its text, its HTML only in a sandboxed iframe, and its attachment downloaded byte for byte',
    async () => {
      const subject = `Question about invoice ${process.pid}`;
      const attachment = randomBytes(40_000);
      const transport = createTransport({ host: '127.0.0.1', port: smtp.port, secure: false, ignoreTLS: true });
      const info = (await transport.sendMail({
        from: 'Client <client@remote.example>',
        to: `support@${sendingDomain.domain}`,
        subject,
        text: 'Hello,\n\nthe invoice attached looks wrong.\nCould you check it?',
        html: '<p>Hello,</p><p>the invoice attached <b>looks wrong</b>.</p><script>document.body.append("script ran")</script>',
        attachments: [{ filename: 'invoice-2024.pdf', content: attachment, contentType: 'application/pdf' }],
      })) as SentMessageInfo;
      const inboundId = /queued as ([a-f0-9]{24})/.exec(info.response ?? '')?.[1];
      expect(inboundId, info.response).toBeDefined();
      await waitFor(
        'the message to settle in the inbox',
        async () => {
          const message = await scopeToOrg(h.stack.orm.em, orgId).findOne(InboxMessage, { inboundId });
          return message?.attachmentsReady ? message : undefined;
        },
        DEADLINE_MS,
        100,
      );

      await page.goto(`${h.api.url}/dashboard/inbox`);
      const thread = page.getByRole('row').filter({ hasText: subject });
      expect(await thread.count()).toBe(1);
      expect(await thread.getByText('1 unread').count()).toBe(1);
      expect(await thread.textContent()).toContain('client@remote.example');
      await screenshot(page, 'dashboard-inbox');

      await thread.getByRole('link', { name: subject }).click();
      await page.waitForURL(/\/dashboard\/inbox\/threads\/[0-9a-f]{24}$/);
      const article = page.locator('article').filter({ has: page.getByRole('heading', { name: /client@remote\.example/ }) });
      expect(await article.count()).toBe(1);
      expect(await article.locator('.message-text').textContent()).toContain('the invoice attached looks wrong.');
      expect(await article.locator('.message-text p').count()).toBe(2);

      // The HTML body: only inside an iframe with an empty sandbox (no scripts, opaque origin), never in the page.
      expect(await page.locator('main b, main script').count()).toBe(0);
      const iframe = article.locator('iframe.message-html');
      expect(await iframe.count()).toBe(1);
      expect(await iframe.getAttribute('sandbox')).toBe('');
      await article.getByText('HTML version').click();
      const frame = article.frameLocator('iframe.message-html');
      await expect.poll(() => frame.locator('b').textContent()).toBe('looks wrong');
      // Its script did not run (what it would have written is not there; the script's own source is not rendered text).
      expect(await frame.locator('body').innerText()).not.toContain('script ran');

      const link = article.getByRole('link', { name: 'invoice-2024.pdf' });
      expect(await link.getAttribute('download')).toBe('');
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      expect(download.suggestedFilename()).toBe('invoice-2024.pdf');
      const bytes = await readFile(await download.path());
      expect(bytes.equals(attachment)).toBe(true);
      await screenshot(page, 'dashboard-thread');
    },
    TEST_TIMEOUT_MS,
  );

  it('draws the metrics chart', async () => {
    await page.goto(`${h.api.url}/dashboard/metrics`);
    await expect.poll(() => page.locator('#outcomes-chart canvas').count()).toBe(1);
    const series = JSON.parse((await page.locator('#outcomes-chart').getAttribute('data-series')) ?? '{}') as {
      dates: string[];
      sent: number[];
      delivered: number[];
    };
    expect(series.dates).toHaveLength(7);
    if (emailDelivered) {
      for (const outcome of ['sent', 'delivered'] as const)
        expect(
          series[outcome].reduce((a, b) => a + b, 0),
          outcome,
        ).toBeGreaterThanOrEqual(1);
      const tile = page.locator('.tiles li').filter({ hasText: 'Delivered' }).locator('strong');
      expect(Number((await tile.textContent())?.replace(/,/g, ''))).toBeGreaterThanOrEqual(1);
    }
    await screenshot(page, 'dashboard-metrics');
  });
});
