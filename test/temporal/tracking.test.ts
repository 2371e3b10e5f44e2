import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationRun, TransactionalEmail, type Domain } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addActiveAutomation, addContacts, addPublishedTemplate, enrolAndWake, senderOn, statsOf } from '../support/automations.ts';
import { startDnsServer, type TestDnsServer } from '../support/dns-server.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { unique } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { sendRaw } from '../support/raw-request.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Tracking end to end: a domain with a verified tracking host, a transactional send that asks
 * for tracking (its pixel and links on that host), the hits through the api with that Host,
 * the worker's tracking counter turning them into the email's events and webhooks; and an
 * automation email whose click starts another automation's `email.clicked` trigger.
 */
describe('open and click tracking (send → relay → hit on the tracking host → events)', () => {
  let sink: MailSink;
  let dns: TestDnsServer;
  let receiver: WebhookReceiver;
  let h: ApiHarness;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let orgId: string;
  let domain: Domain;
  let trackingHost: string;

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  /** Fetches a tracking URL from the mail through the api, with the URL's host as the Host header. */
  const hit = (url: string) => {
    const parsed = new URL(url);
    return sendRaw({
      method: 'GET',
      url: `${h.api.url}${parsed.pathname}${parsed.search}`,
      headers: { host: parsed.host },
      body: Buffer.alloc(0),
    });
  };
  const htmlTo = async (address: string) => {
    const message = await until(
      'the message to reach the sink',
      () => Promise.resolve(sink.messages().find((m) => m.rcptTo.includes(address))),
      Boolean,
    );
    return (await simpleParser(message!.raw)).html || '';
  };
  const urlsIn = (html: string) => ({
    clicks: [...html.matchAll(/href="([^"]+\/t\/c\/[^"]+)"/g)].map((m) => m[1]!.replaceAll('&amp;', '&')),
    pixel: /<img src="([^"]+\/t\/o\/[^"]+)"/.exec(html)?.[1] ?? null,
  });

  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    dns = await startDnsServer();
    receiver = await startWebhookReceiver();
    h = await startApiHarness(
      {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`,
        SMTP_RELAY_FINAL_HOP: 'true',
        BOUNCE_DOMAIN: 'bounces.herald.test',
        DNS_SERVERS: dns.address,
        DNS_TIMEOUT_MS: '300',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    temporal = await connectTemporalClient(h.stack.config);
    orgId = h.workspace.org.id;
    domain = await addSendingDomain(h.stack.orm, orgId);
    await setCredits(h.stack.orm, orgId, 1_000);
    trackingHost = `track.${domain.domain}`;
    dns.set(trackingHost, { CNAME: 'herald.test' });
    const set = await h.request('PATCH', `/api/v1/domains/${domain.id}/tracking`, { headers: idem(), body: { host: trackingHost } });
    expect(set.body.data, JSON.stringify(set.body)).toMatchObject({ status: 'verified' });
    // A test key of the workspace may register the receiver's http URL (events reach every endpoint of the workspace).
    const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({ orgId, scopes: ['all'], mode: 'test' });
    const hook = await apiClient(h.api.url, key)('POST', '/api/v1/webhooks', {
      headers: idem(),
      body: { name: 'engagement', url: receiver.url('/hook'), events: ['email.opened', 'email.clicked'] },
    });
    expect(hook.status, JSON.stringify(hook.body)).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await h?.close();
    await receiver?.close();
    await dns?.close();
    await sink?.close();
  });

  it('tracks a transactional send that asks for it on the custom host, and records opened/clicked events and webhooks', async () => {
    const to = `reader-${unique('t')}@example.com`;
    const sent = await h.request('POST', '/api/v1/outbox/emails', {
      headers: idem(),
      body: {
        from: `hello@${domain.domain}`,
        to,
        subject: 'Your receipt',
        html: '<html><body><p><a href="https://shop.example/order/1">Order</a></p></body></html>',
        tracking: { opens: true, clicks: true },
      },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const emailId = (sent.body.data as { _id: string })._id;
    const { clicks, pixel } = urlsIn(await htmlTo(to));
    expect(pixel?.startsWith(`http://${trackingHost}/t/o/${emailId}.`), pixel ?? '').toBe(true);
    expect(clicks).toHaveLength(1);
    expect(clicks[0]!.startsWith(`http://${trackingHost}/t/c/${emailId}.`)).toBe(true);
    expect(new URL(clicks[0]!).searchParams.get('u')).toBe('https://shop.example/order/1');

    expect((await hit(pixel!)).status).toBe(200);
    const click = await hit(clicks[0]!);
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://shop.example/order/1');

    const record = await until(
      'opened and clicked events on the email',
      async () =>
        (await h.request('GET', `/api/v1/outbox/emails/${emailId}`)).body.data as { events: { type: string }[]; tracking: unknown },
      (data) => ['opened', 'clicked'].every((type) => data.events.some((e) => e.type === type)),
    );
    expect(record.tracking).toEqual({ opens: true, clicks: true });
    const hooks = await receiver.waitForRequests('/hook', 2);
    const events = hooks.map((r) => JSON.parse(r.body) as { type: string; data: { email_id: string; url?: string } });
    expect(events.map((e) => e.type).sort()).toEqual(['email.clicked', 'email.opened']);
    expect(events.every((e) => e.data.email_id === emailId)).toBe(true);
    expect(events.find((e) => e.type === 'email.clicked')?.data.url).toBe('https://shop.example/order/1');
  });

  it('leaves a transactional send untracked by default', async () => {
    const to = `plain-${unique('t')}@example.com`;
    const sent = await h.request('POST', '/api/v1/outbox/emails', {
      headers: idem(),
      body: { from: `hello@${domain.domain}`, to, subject: 'Plain', html: '<p><a href="https://shop.example/">Shop</a></p>' },
    });
    expect(sent.status, JSON.stringify(sent.body)).toBe(202);
    const html = await htmlTo(to);
    expect(urlsIn(html)).toEqual({ clicks: [], pixel: null });
    expect(html).toContain('href="https://shop.example/"');
  });

  it("counts a click on an automation email for another automation's email.clicked trigger of its template", async () => {
    const welcome = await addPublishedTemplate(h.stack.orm, orgId, {
      subject: 'Welcome',
      html: '<p><a href="https://shop.example/start">Start</a></p>',
    });
    const sender = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'contact.created' },
      start: 'welcome',
      steps: [{ id: 'welcome', type: 'send_email', template_id: welcome.id, from: senderOn(domain) }],
    });
    const follower = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'email.clicked', template_id: welcome.id },
      start: 'done',
      steps: [{ id: 'done', type: 'exit', reason: 'clicked' }],
    });
    const [contact] = await addContacts(h.stack.orm, orgId, [`clicker-${unique('a')}@example.com`]);
    await enrolAndWake(h.stack.orm, temporal.client, h.stack.config, {
      orgId,
      type: 'contact.created',
      key: null,
      contactIds: [contact!.id],
    });

    const { clicks } = urlsIn(await htmlTo(contact!.email));
    expect(clicks[0]?.startsWith(`http://${trackingHost}/t/c/`), clicks.join()).toBe(true);
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    const [run] = await em.find(AutomationRun, { automationId: sender.id });
    const email = await em.findOneOrFail(TransactionalEmail, { automationRunId: run!.id });
    expect({ opens: email.trackOpens, clicks: email.trackClicks }).toEqual({ opens: true, clicks: true });

    expect((await hit(clicks[0]!)).status).toBe(302);
    const stats = await until(
      'the clicked trigger to start a run',
      () => statsOf(h.stack.orm, orgId, follower.id),
      (s) => s.totalRuns === 1,
    );
    expect(stats.totalRuns).toBe(1);
  });
});
