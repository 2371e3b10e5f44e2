import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Contact,
  Domain,
  EmailEvent,
  Event,
  Organization,
  Segment,
  SegmentMember,
  Suppression,
  TrackingHit,
  TransactionalEmail,
} from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { startMailSink, type MailSink, type SinkMessage } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { createRecipientLinks } from '../../src/modules/broadcasts/recipient-links.ts';
import { sendDomainActorContract } from '../../workflows/send-domain.ts';
import { wakeActors } from '../../src/temporal/actor-wake.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, type ApiResponse } from '../support/http.ts';
import { addSendingDomain } from '../support/sending.ts';
import { TEST_ENCRYPTION_KEY } from '../support/stack.ts';

type Metrics = Record<'recipients' | 'sent' | 'delivered' | 'bounced' | 'complained' | 'unsubscribed' | 'opened' | 'clicked', number>;
type BroadcastBody = { _id: string; status: string; scheduledAt: string | null; metrics: Metrics };

const DAY = 24 * 3600 * 1000;

function expectRefusal(response: ApiResponse, status: number, code: string, reason: string): void {
  expectError(response, status, code);
  expect((response.body.error?.details as { reason?: string } | undefined)?.reason, JSON.stringify(response.body)).toBe(reason);
}

describe('broadcast sends (launch → audience on the domain queue → relay; unsubscribe; cancel)', () => {
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let orgId: string;
  let temporal: TemporalClientHandle;

  const em = () => scopeToOrg(h.stack.orm.em.fork(), orgId);

  async function addContact(
    email: string,
    fields: Partial<Pick<Contact, 'firstName' | 'lastName' | 'company' | 'tags' | 'status' | 'customFields'>> = {},
  ): Promise<Contact> {
    const scoped = em();
    const contact = scoped.create(Contact, { orgId, email: email.toLowerCase(), ...fields });
    await scoped.flush();
    return contact;
  }

  async function addSegment(fields: { tags?: string[]; type?: string } = {}): Promise<string> {
    const scoped = em();
    const segment = scoped.create(Segment, { orgId, name: unique('segment'), type: fields.type ?? 'tag', tags: fields.tags ?? [] });
    await scoped.flush();
    return segment.id;
  }

  async function draft(domain: Domain, segmentIds: string[], overrides: Record<string, unknown> = {}): Promise<string> {
    const response = await h.request('POST', '/api/v1/outbox/broadcasts', {
      headers: idem(),
      body: {
        name: unique('Newsletter'),
        subject: 'News for {{first_name}}',
        preview_text: 'This week at the shop',
        from_name: 'The Shop',
        from_email: `news@${domain.domain}`,
        segment_ids: segmentIds,
        html: '<html><body><p>Hi {{#first_name}}{{first_name}}{{/first_name}}{{^first_name}}there{{/first_name}}, your plan: {{plan}}</p></body></html>',
        plain_text: 'Hi {{first_name}}, your plan: {{plan}}',
        ...overrides,
      },
    });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return (response.body.data as BroadcastBody)._id;
  }

  const launch = (id: string, body: Record<string, unknown> = {}) =>
    h.request('POST', `/api/v1/outbox/broadcasts/${id}/send`, { headers: idem(), body });
  const cancel = (id: string) => h.request('POST', `/api/v1/outbox/broadcasts/${id}/cancel`, { headers: idem(), body: {} });
  const getBroadcast = async (id: string) => {
    const response = await h.request('GET', `/api/v1/outbox/broadcasts/${id}`);
    expect(response.status, JSON.stringify(response.body)).toBe(200);
    return response.body.data as BroadcastBody;
  };

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  const messagesFrom = (domain: Domain): SinkMessage[] => sink.messages().filter((m) => m.mailFrom.endsWith(`@bounces.${domain.domain}`));
  const unsubscribeUrlOf = async (message: SinkMessage) => {
    const parsed = await simpleParser(message.raw);
    const header = parsed.headerLines.find((line) => line.key === 'list-unsubscribe')?.line ?? '';
    return /<([^>]+)>/.exec(header)?.[1] ?? '';
  };
  /** The link's path on the test api (PUBLIC_URL is the api's own address in tests, but be exact). */
  const onApi = (url: string) => {
    const parsed = new URL(url);
    return `${h.api.url}${parsed.pathname}`;
  };

  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    h = await startApiHarness(
      {
        SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`,
        SMTP_RELAY_FINAL_HOP: 'true',
        BOUNCE_DOMAIN: 'bounces.herald.test',
      },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    temporal = await connectTemporalClient(h.stack.config);
    orgId = h.workspace.org.id;
    const scoped = h.stack.orm.em.fork();
    await scoped.nativeUpdate(Organization, { id: orgId }, { postalAddress: 'The Shop, 1 Market Street, Springfield' });
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await h?.close();
    await sink?.close();
  });

  it('sends once to each eligible contact of the segments, personalised, with one-click unsubscribe, and ends sent', async () => {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const tag = unique('news');
    const tagged = await addSegment({ tags: [tag] });
    const fixed = await addSegment({ type: 'static' });
    const ann = await addContact(`ann-${tag}@example.com`, { firstName: 'Ann', tags: [tag], customFields: { plan: 'Pro' } });
    const bob = await addContact(`bob-${tag}@example.com`, {
      firstName: '<b>Bob</b>',
      tags: [tag],
      customFields: { plan: 'Free & <i>easy</i>' },
    });
    const nameless = await addContact(`anon-${tag}@example.com`, { tags: [tag] });
    await addContact(`gone-${tag}@example.com`, { tags: [tag], status: 'unsubscribed' });
    await addContact(`bounced-${tag}@example.com`, { tags: [tag], status: 'bounced' });
    const suppressed = await addContact(`blocked-${tag}@example.com`, { tags: [tag] });
    const scoped = em();
    scoped.create(Suppression, { orgId, email: suppressed.email, reason: 'manual' });
    // In both segments: mailed once.
    scoped.create(SegmentMember, { segmentId: fixed, contactId: ann.id, orgId });
    const onlyStatic = await addContact(`static-${tag}@example.com`, { firstName: 'Stan' });
    scoped.create(SegmentMember, { segmentId: fixed, contactId: onlyStatic.id, orgId });
    await scoped.flush();

    const id = await draft(domain, [tagged, fixed]);
    const launched = await launch(id);
    expect(launched.status, JSON.stringify(launched.body)).toBe(202);
    expect((launched.body.data as BroadcastBody).status).toBe('sending');
    // Added to the segment after launch: not in this broadcast's audience.
    const late = await addContact(`late-${tag}@example.com`, { firstName: 'Late', tags: [tag] });

    const sent = await until(
      'the broadcast to be sent',
      () => getBroadcast(id),
      (b) => b.status === 'sent',
    );
    const eligible = [ann, bob, nameless, onlyStatic].map((c) => c.email).sort();
    expect(sent.metrics).toMatchObject({ recipients: 4, sent: 4, delivered: 4, bounced: 0, unsubscribed: 0 });
    const messages = messagesFrom(domain);
    expect(messages.flatMap((m) => m.rcptTo).sort()).toEqual(eligible);
    expect(messages.some((m) => m.rcptTo.includes(late.email))).toBe(false);

    const byRecipient = new Map(await Promise.all(messages.map(async (m) => [m.rcptTo[0]!, await simpleParser(m.raw)] as const)));
    const forBob = byRecipient.get(bob.email)!;
    expect(forBob.subject).toBe('News for <b>Bob</b>');
    // Mustache escapes &, <, >, quotes and / in {{values}} of the HTML body.
    expect(forBob.html).toContain('Hi &lt;b&gt;Bob&lt;&#x2F;b&gt;, your plan: Free &amp; &lt;i&gt;easy&lt;&#x2F;i&gt;');
    expect(forBob.text).toContain('Hi <b>Bob</b>, your plan: Free & <i>easy</i>');
    expect(byRecipient.get(nameless.email)!.html).toContain('Hi there, your plan: </p>');
    expect(byRecipient.get(ann.email)!.html).toContain('This week at the shop');
    for (const parsed of byRecipient.values()) {
      expect(parsed.headerLines.find((line) => line.key === 'list-unsubscribe-post')?.line).toBe(
        'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
      );
      const link = (parsed.headerLines.find((line) => line.key === 'list-unsubscribe')?.line ?? '').replace(/^list-unsubscribe:\s*/i, '');
      expect(link.startsWith(`<${h.stack.config.http.publicUrl}/unsubscribe/`), link).toBe(true);
      expect(link).toMatch(/\/unsubscribe\/[0-9a-f]{24}\.[0-9a-z]+\.[\w-]{22}>$/);
      expect(parsed.html).toContain('The Shop, 1 Market Street, Springfield');
      expect(parsed.text).toContain('The Shop, 1 Market Street, Springfield');
      // RFC 8058: the DKIM signature covers both list headers.
      const signature = String(
        parsed.headers.get('dkim-signature') && (parsed.headerLines.find((l) => l.key === 'dkim-signature')?.line ?? ''),
      );
      expect(signature.toLowerCase().replace(/\s+/g, '')).toMatch(/h=[^;]*list-unsubscribe:list-unsubscribe-post/);
    }

    // No endpoint subscribes in this workspace: the per-message email.sent / email.delivered
    // events are not written (nobody would receive them); the facts behind the metrics are.
    expect(await em().count(Event, { type: { $in: ['email.sent', 'email.delivered'] } })).toBe(0);
    expect(await em().count(EmailEvent, { broadcastId: id, type: 'delivered' })).toBe(4);

    // The email log lists transactional emails only.
    const log = await h.request('GET', '/api/v1/outbox/emails?limit=100');
    expect((log.body.data as { _id: string }[]).length).toBe(0);
    // Status changes reached the event stream.
    const events = await em().find(Event, { type: { $in: ['broadcast.sending', 'broadcast.sent'] } });
    expect(
      events
        .filter((e) => (e.data as { broadcast: { _id: string } }).broadcast._id === id)
        .map((e) => e.type)
        .sort(),
    ).toEqual(['broadcast.sending', 'broadcast.sent']);

    // One-click unsubscribe (RFC 8058): a POST with List-Unsubscribe=One-Click.
    const annMessage = messages.find((m) => m.rcptTo.includes(ann.email))!;
    const annLink = await unsubscribeUrlOf(annMessage);
    const oneClick = async () =>
      fetch(onApi(annLink), {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'List-Unsubscribe=One-Click',
      });
    const first = await oneClick();
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('You are unsubscribed');
    expect((await em().findOneOrFail(Contact, { id: ann.id }, { refresh: true })).status).toBe('unsubscribed');
    expect(await em().findOne(Suppression, { email: ann.email })).toMatchObject({ reason: 'unsubscribe' });
    expect((await oneClick()).status).toBe(200);
    expect((await getBroadcast(id)).metrics.unsubscribed).toBe(1);
    const unsubscribedEvents = await em().find(Event, { type: 'contact.unsubscribed' });
    expect(unsubscribedEvents.filter((e) => (e.data as { contact: { email: string } }).contact.email === ann.email)).toHaveLength(1);

    // The page a person opens asks first: a GET (as link scanners do) unsubscribes nothing.
    const bobLink = await unsubscribeUrlOf(messages.find((m) => m.rcptTo.includes(bob.email))!);
    const page = await fetch(onApi(bobLink));
    expect(page.status).toBe(200);
    const html = await page.text();
    expect(html).toContain('<form method="post">');
    expect(html).toContain(bob.email);
    expect((await em().findOneOrFail(Contact, { id: bob.id }, { refresh: true })).status).toBe('active');
  });

  it('tracks opens and clicks once per recipient, flags a burst, never redirects anywhere it did not sign; tracking can be off', async () => {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const tag = unique('track');
    const segment = await addSegment({ tags: [tag] });
    const reader = await addContact(`reader-${tag}@example.com`, { tags: [tag] });
    const scanner = await addContact(`scanner-${tag}@example.com`, { tags: [tag] });
    const clicker = await addContact(`clicker-${tag}@example.com`, { tags: [tag] });
    const html =
      '<html><body><p><a href="https://shop.example/a?x=1&amp;y=2">A</a> <a class="b" href=\'https://shop.example/b\'>B</a> ' +
      '<a href="mailto:help@shop.example">mail</a> <a href="{{unsubscribe_url}}">leave</a></p></body></html>';
    const id = await draft(domain, [segment], { html });
    expect((await launch(id)).status).toBe(202);
    await until(
      'the broadcast to be sent',
      () => getBroadcast(id),
      (b) => b.status === 'sent',
    );
    const htmlFor = async (contact: Contact) =>
      (await simpleParser(messagesFrom(domain).find((m) => m.rcptTo.includes(contact.email))!.raw)).html as string;
    const linksOf = (body: string) => ({
      clicks: [...body.matchAll(/href=(["'])([^"']*\/t\/c\/[^"']*)\1/g)].map((m) => m[2]!.replace(/&amp;/g, '&')),
      pixel: /<img src="([^"]*\/t\/o\/[^"]*\.gif)"/.exec(body)?.[1] ?? '',
    });
    const readerHtml = await htmlFor(reader);
    const readerLinks = linksOf(readerHtml);
    expect(readerLinks.clicks).toHaveLength(2);
    expect(readerHtml).toContain('href="mailto:help@shop.example"');
    // {{unsubscribe_url}} (escaped by Mustache: `/` as `&#x2F;`) is left as it is, not tracked.
    expect(readerHtml.replace(/&#x2F;/g, '/')).toMatch(/<a href="[^"]*\/unsubscribe\/[^"]+">leave<\/a>/);
    expect(readerLinks.pixel).not.toBe('');
    const get = (url: string, init: RequestInit = {}) => fetch(onApi(url) + (new URL(url).search ?? ''), { redirect: 'manual', ...init });

    // The reader opens, then clicks A (twice, seconds apart).
    const pixel = await get(readerLinks.pixel);
    expect(pixel.status).toBe(200);
    expect(pixel.headers.get('content-type')).toBe('image/gif');
    const click = await get(readerLinks.clicks[0]!);
    expect(click.status).toBe(302);
    expect(click.headers.get('location')).toBe('https://shop.example/a?x=1&y=2');
    // The scanner fetches the pixel and every link at once: flagged, not counted.
    const scannerLinks = linksOf(await htmlFor(scanner));
    await Promise.all([get(scannerLinks.pixel), ...scannerLinks.clicks.map((url) => get(url))]);
    // The clicker clicks B with images off: a click, and an open.
    const clickerLinks = linksOf(await htmlFor(clicker));
    expect((await get(clickerLinks.clicks[1]!)).headers.get('location')).toBe('https://shop.example/b');
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await get(readerLinks.clicks[0]!)).status).toBe(302);

    const counted = await until(
      'opens and clicks to be counted',
      () => getBroadcast(id),
      (b) => b.metrics.opened >= 2 && b.metrics.clicked >= 2,
      20_000,
    );
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await getBroadcast(id)).metrics).toMatchObject({ recipients: 3, opened: 2, clicked: 2 });
    expect(counted.metrics.opened).toBe(2);
    const hits = await em().find(TrackingHit, { broadcastId: id }, { orderBy: { at: 'asc' } });
    expect(
      hits.filter((hit) => hit.emailId === hits.find((x) => x.state === 'flagged')?.emailId).every((hit) => hit.state === 'flagged'),
    ).toBe(true);
    expect(hits.filter((hit) => hit.state === 'repeat')).toHaveLength(1);
    const metrics = await h.request('GET', '/api/v1/metrics?period=7d');
    expect((metrics.body.data as { summary: { opened: number; clicked: number } }).summary).toMatchObject({ opened: 2, clicked: 2 });

    // Not an open redirect: another target, another message's token, or no http(s) target is a 404 page.
    const [path, query] = readerLinks.clicks[0]!.split('?') as [string, string];
    const elsewhere = `${onApi(path)}?u=${encodeURIComponent('https://evil.example/')}`;
    expect((await fetch(elsewhere, { redirect: 'manual' })).status).toBe(404);
    const clickerPath = clickerLinks.clicks[0]!.split('?')[0]!;
    expect(
      (await fetch(`${onApi(clickerPath)}?${query.replace('shop.example%2Fa', 'shop.example%2Fb')}`, { redirect: 'manual' })).status,
    ).toBe(404);
    expect((await fetch(`${onApi(path)}?u=${encodeURIComponent('javascript:alert(1)')}`, { redirect: 'manual' })).status).toBe(404);
    expect((await fetch(`${onApi(path)}`, { redirect: 'manual' })).status).toBe(404);
    // A made-up pixel is still a GIF, and records nothing.
    const before = await em().count(TrackingHit, {});
    expect((await fetch(`${h.api.url}/t/o/${'0'.repeat(24)}.AAAAAAAAAAAAAAAAAAAAAA.gif`)).status).toBe(200);
    expect(await em().count(TrackingHit, {})).toBe(before);

    // Tracking off: no pixel, links untouched.
    const plain = await draft(domain, [segment], { html });
    expect((await launch(plain, { tracking: false })).status).toBe(202);
    await until(
      'the untracked broadcast to be sent',
      () => getBroadcast(plain),
      (b) => b.status === 'sent',
    );
    const untracked = (await Promise.all(messagesFrom(domain).map((m) => simpleParser(m.raw)))).filter(
      (m) => m.subject !== undefined && (m.html as string).includes('https://shop.example/a?x=1&amp;y=2'),
    );
    expect(untracked).toHaveLength(3);
    for (const message of untracked) expect(message.html).not.toMatch(/\/t\/[oc]\//);
  });

  it('refuses forged, altered and expired unsubscribe links without changing anything', async () => {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const tag = unique('forge');
    const segment = await addSegment({ tags: [tag] });
    const contact = await addContact(`forge-${tag}@example.com`, { tags: [tag] });
    const id = await draft(domain, [segment]);
    expect((await launch(id)).status).toBe(202);
    await until(
      'the broadcast to be sent',
      () => getBroadcast(id),
      (b) => b.status === 'sent',
    );
    const link = await unsubscribeUrlOf(messagesFrom(domain)[0]!);
    const [emailId, expires, signature] = link.split('/unsubscribe/')[1]!.split('.');

    const flipped = `${signature!.slice(0, -1)}${signature!.endsWith('A') ? 'B' : 'A'}`;
    const later = (Number.parseInt(expires!, 36) + 3600).toString(36);
    const otherKey = createRecipientLinks(Buffer.alloc(32, 7), h.stack.config.http.publicUrl).url(emailId!);
    const expired = createRecipientLinks(Buffer.from(TEST_ENCRYPTION_KEY, 'base64'), h.stack.config.http.publicUrl).url(
      emailId!,
      new Date(Date.now() - 61 * DAY),
    );
    for (const [bad, status] of [
      [`${h.api.url}/unsubscribe/${emailId}.${expires}.${flipped}`, 404],
      [`${h.api.url}/unsubscribe/${emailId}.${later}.${signature}`, 404],
      [onApi(otherKey), 404],
      [`${h.api.url}/unsubscribe/${'0'.repeat(24)}.${expires}.${signature}`, 404],
      [`${h.api.url}/unsubscribe/not-a-token`, 404],
      [onApi(expired), 410],
    ] as const) {
      const response = await fetch(bad, {
        method: 'POST',
        body: 'List-Unsubscribe=One-Click',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expect(response.status, bad).toBe(status);
    }
    expect((await em().findOneOrFail(Contact, { id: contact.id }, { refresh: true })).status).toBe('active');
    expect(await em().findOne(Suppression, { email: contact.email })).toBeNull();
  });

  it('holds broadcast messages past the warm-up cap, skips a contact that unsubscribed before its turn, and can be cancelled mid-way', async () => {
    const domain = await addSendingDomain(h.stack.orm, orgId, { dailyCap: 2 });
    const tag = unique('capped');
    const segment = await addSegment({ tags: [tag] });
    const contacts: Contact[] = [];
    for (let i = 0; i < 5; i += 1) contacts.push(await addContact(`c${i}-${tag}@example.com`, { firstName: `C${i}`, tags: [tag] }));
    const id = await draft(domain, [segment]);
    expect((await launch(id)).status).toBe(202);

    // Two go today; the rest wait for the next UTC day.
    await until(
      'two messages at the relay',
      () => Promise.resolve(messagesFrom(domain).length),
      (n) => n >= 2,
    );
    await until(
      'the audience to be queued',
      () => getBroadcast(id),
      (b) => b.metrics.recipients === 5,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(messagesFrom(domain)).toHaveLength(2);
    expect((await getBroadcast(id)).status).toBe('sending');

    // A contact not yet sent to unsubscribes (PATCH) before its turn; the cap is raised.
    const waiting = contacts.filter((c) => !messagesFrom(domain).some((m) => m.rcptTo.includes(c.email)));
    expect(waiting).toHaveLength(3);
    const patched = await h.request('PATCH', `/api/v1/contacts/${waiting[0]!.id}`, { headers: idem(), body: { status: 'unsubscribed' } });
    expect(patched.status, JSON.stringify(patched.body)).toBe(200);
    await h.stack.orm.em.fork().nativeUpdate(Domain, { id: domain.id }, { dailyCap: 3 }, ALL_TENANTS);
    await wakeActors(temporal.client, h.stack.config, sendDomainActorContract, [{ orgId, domainId: domain.id }]);
    await until(
      'a third message',
      () => Promise.resolve(messagesFrom(domain).length),
      (n) => n >= 3,
    );
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const delivered = messagesFrom(domain).flatMap((m) => m.rcptTo);
    expect(delivered).toHaveLength(3);
    expect(delivered).not.toContain(waiting[0]!.email);
    const skipped = await em().findOneOrFail(TransactionalEmail, { broadcastId: id, contactId: waiting[0]!.id });
    expect(skipped).toMatchObject({ status: 'cancelled', lastError: 'skipped: contact unsubscribed' });

    // Cancel while one message still waits for tomorrow: it is never sent.
    const cancelled = await cancel(id);
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect((cancelled.body.data as BroadcastBody).status).toBe('cancelled');
    await until(
      'queued messages to be cancelled',
      () => em().count(TransactionalEmail, { broadcastId: id, status: 'queued' }),
      (n) => n === 0,
    );
    await h.stack.orm.em.fork().nativeUpdate(Domain, { id: domain.id }, { dailyCap: null }, ALL_TENANTS);
    await wakeActors(temporal.client, h.stack.config, sendDomainActorContract, [{ orgId, domainId: domain.id }]);
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(messagesFrom(domain)).toHaveLength(3);
    const final = await getBroadcast(id);
    expect(final).toMatchObject({ status: 'cancelled', metrics: { recipients: 5, sent: 3 } });
    expectError(await cancel(id), 409, 'conflict');
    expectError(await launch(id), 409, 'conflict');
  });

  // Three tests rather than one: each waits on its own workflows, and under a full run's load
  // one test holding all three waits ran past the per-test timeout.
  async function scheduledSetup(name: string) {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const tag = unique(name);
    const segment = await addSegment({ tags: [tag] });
    await addContact(`s-${tag}@example.com`, { tags: [tag] });
    return { domain, segment };
  }

  it('launches for scheduled_at and sends when it comes', async () => {
    const { domain, segment } = await scheduledSetup('sched');

    const at = new Date(Date.now() + 2_500).toISOString();
    const scheduled = await draft(domain, [segment]);
    const launched = await launch(scheduled, { scheduled_at: at });
    expect(launched.status, JSON.stringify(launched.body)).toBe(202);
    expect(launched.body.data).toMatchObject({ status: 'scheduled', scheduledAt: at });
    const sent = await until(
      'the scheduled broadcast to be sent',
      () => getBroadcast(scheduled),
      (b) => b.status === 'sent',
    );
    expect(sent.metrics).toMatchObject({ recipients: 1, sent: 1 });
    expect(messagesFrom(domain)).toHaveLength(1);
  });

  it('cancels a scheduled broadcast before it comes, ending its workflow', async () => {
    const { domain, segment } = await scheduledSetup('cancel');
    const later = await draft(domain, [segment]);
    expect((await launch(later, { scheduled_at: new Date(Date.now() + 3_600_000).toISOString() })).status).toBe(202);
    expect((await cancel(later)).status).toBe(200);
    expect(await getBroadcast(later)).toMatchObject({ status: 'cancelled', metrics: { recipients: 0 } });
    const handle = temporal.client.workflow.getHandle(`broadcast:${later}`);
    await expect(handle.result()).resolves.toBe('cancelled');
  });

  it('refuses what cannot be launched, each refusal leaving the draft a draft', async () => {
    const { domain, segment } = await scheduledSetup('refuse');
    const refused = await draft(domain, [segment]);
    expectRefusal(
      await launch(refused, { scheduled_at: new Date(Date.now() - 60_000).toISOString() }),
      400,
      'invalid_request',
      'SCHEDULE_OUT_OF_RANGE',
    );
    expectRefusal(
      await launch(refused, { scheduled_at: new Date(Date.now() + 31 * DAY).toISOString() }),
      400,
      'invalid_request',
      'SCHEDULE_OUT_OF_RANGE',
    );
    expect((await launch(refused, { scheduled_at: new Date(Date.now() + 29 * DAY).toISOString() })).status).toBe(202);
    expect((await cancel(refused)).status).toBe(200);
    const empty = await draft(domain, [segment], { html: '', plain_text: '  ' });
    expectRefusal(await launch(empty), 400, 'invalid_request', 'EMPTY_BODY');
    const broken = await draft(domain, [segment], { html: '<p>{{#open}}never closed</p>' });
    expectRefusal(await launch(broken), 400, 'invalid_request', 'TEMPLATE_INVALID');
    const pending = await addSendingDomain(h.stack.orm, orgId, { verified: false });
    const unverified = await draft(pending, [segment]);
    expectRefusal(await launch(unverified), 403, 'forbidden', 'DOMAIN_NOT_READY');
    expect((await getBroadcast(unverified)).status).toBe('draft');
    const neverLaunched = await draft(domain, [segment]);
    expectRefusal(await cancel(neverLaunched), 409, 'conflict', 'BROADCAST_NOT_CANCELLABLE');
  });

  it("requires outbox.broadcasts:send to launch or cancel, and hides other workspaces' broadcasts (404)", async () => {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const segment = await addSegment({ tags: [unique('scope')] });
    const id = await draft(domain, [segment]);
    const readWrite = await createOrgWithKey(h.stack.orm, { scopes: ['outbox.broadcasts:read', 'outbox.broadcasts:write'] });
    const writer = apiClient(h.api.url, readWrite.key);
    expectError(await writer('POST', `/api/v1/outbox/broadcasts/${id}/send`, { headers: idem(), body: {} }), 403, 'missing_scope');
    expectError(await writer('POST', `/api/v1/outbox/broadcasts/${id}/cancel`, { headers: idem(), body: {} }), 403, 'missing_scope');
    const other = await createOrgWithKey(h.stack.orm);
    const stranger = apiClient(h.api.url, other.key);
    expectError(await stranger('GET', `/api/v1/outbox/broadcasts/${id}`), 404, 'not_found');
    expectError(await stranger('POST', `/api/v1/outbox/broadcasts/${id}/send`, { headers: idem(), body: {} }), 404, 'not_found');
    expectError(await stranger('POST', `/api/v1/outbox/broadcasts/${id}/cancel`, { headers: idem(), body: {} }), 404, 'not_found');
    expect((await getBroadcast(id)).status).toBe('draft');
  });
});
