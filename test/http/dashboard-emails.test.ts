import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EmailEvent,
  EmailRecipient,
  TransactionalEmail,
  type EmailEventType,
  type EmailStatus,
  type RecipientKind,
  type RecipientStatus,
} from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { dashboardClient, decodeEntities, signedInPerson } from '../support/dashboard-client.ts';
import { createOrg, unique } from '../support/factories.ts';

/** Text as the pages' templates escape it (ghtml: " & ' < = > as numeric references). */
const escaped = (text: string) => text.replace(/["&'<=>]/g, (c) => `&#${c.charCodeAt(0)};`);

interface SeedRecipient {
  email: string;
  kind?: RecipientKind;
  status?: RecipientStatus;
  attempts?: number;
  lastResponse?: string;
  lastResponseCode?: number;
  bounceType?: 'hard' | 'soft';
}

interface SeedEmail {
  subject: string;
  fromEmail?: string;
  fromName?: string;
  status?: EmailStatus;
  createdAt: Date;
  recipients: SeedRecipient[];
  events?: { type: EmailEventType; recipient: string; occurredAt: Date }[];
}

/** Email rows as acceptance and the delivery pipeline leave them (no Temporal: the rows are written directly). */
async function insertEmails(h: ApiHarness, orgId: string, emails: readonly SeedEmail[]): Promise<string[]> {
  const em = scopeToOrg(h.stack.orm.em, orgId);
  const ids: string[] = [];
  for (const seed of emails) {
    const id = newId(seed.createdAt);
    const fromEmail = seed.fromEmail ?? 'shop@dash.example.com';
    const domain = fromEmail.split('@')[1]!;
    em.create(TransactionalEmail, {
      id,
      orgId,
      domainId: newId(),
      domain,
      fromEmail,
      fromName: seed.fromName ?? null,
      subject: seed.subject,
      text: 'Hello',
      messageId: `${id}.0@${domain}`,
      status: seed.status ?? 'sent',
      quotaDay: seed.createdAt.toISOString().slice(0, 10),
      createdAt: seed.createdAt,
      updatedAt: seed.createdAt,
    });
    for (const r of seed.recipients) {
      em.create(EmailRecipient, {
        orgId,
        emailId: id,
        kind: r.kind ?? 'to',
        email: r.email,
        status: r.status ?? 'sent',
        attempts: r.attempts ?? 1,
        lastResponse: r.lastResponse ?? null,
        lastResponseCode: r.lastResponseCode ?? null,
        bounceType: r.bounceType ?? null,
        createdAt: seed.createdAt,
        updatedAt: seed.createdAt,
      });
    }
    for (const event of seed.events ?? [])
      em.create(EmailEvent, { orgId, emailId: id, type: event.type, recipient: event.recipient, domain, occurredAt: event.occurredAt });
    ids.push(id);
  }
  await em.flush();
  return ids;
}

/** The dashboard's emails pages: the email log (filters, paging) and one email's per-recipient timeline. */
describe('the dashboard: emails', () => {
  let h: ApiHarness;
  const email = () => `${unique('person').toLowerCase()}@example.com`;
  const signIn = async (orgId: string) => (await signedInPerson(h.stack.orm, h.api.url, orgId, { email: email() })).client;
  const minutesAgo = (minutes: number, seconds = 0) => new Date(Date.now() - minutes * 60_000 + seconds * 1000);

  beforeAll(async () => {
    h = await startApiHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('answers no emails page without a session (303 to sign-in)', async () => {
    const [id] = await insertEmails(h, h.workspace.org.id, [
      { subject: 'No session', createdAt: minutesAgo(1), recipients: [{ email: 'ada@example.com' }] },
    ]);
    const client = dashboardClient(h.api.url);
    for (const path of ['/dashboard/emails', `/dashboard/emails/${id}`, '/dashboard/emails?status=sent']) {
      const page = await client.get(path);
      expect(page.status, path).toBe(303);
      expect(page.headers.get('location'), path).toBe('/dashboard/sign-in');
    }
  });

  it("lists the workspace's emails newest first, each linking to its page, filtered by status, recipient and from; not another workspace's", async () => {
    const { org } = await createOrg(h.stack.orm);
    const { org: other } = await createOrg(h.stack.orm);
    const [receipt, reset, failed] = await insertEmails(h, org.id, [
      {
        subject: 'Your receipt',
        fromEmail: 'shop@shop.example.com',
        createdAt: minutesAgo(30),
        recipients: [{ email: 'ada@example.com' }],
      },
      {
        subject: 'Reset your password',
        fromEmail: 'auth@auth.example.com',
        fromName: 'Auth desk',
        createdAt: minutesAgo(20),
        recipients: [{ email: 'bob@example.com' }, { email: 'ada@example.com', kind: 'cc' }],
      },
      {
        subject: 'Never left',
        fromEmail: 'shop@shop.example.com',
        status: 'failed',
        createdAt: minutesAgo(10),
        recipients: [{ email: 'cy@example.com', status: 'failed' }],
      },
    ]);
    await insertEmails(h, other.id, [{ subject: 'Foreign subject', createdAt: minutesAgo(5), recipients: [{ email: 'ada@example.com' }] }]);
    const client = await signIn(org.id);

    const page = await client.get('/dashboard/emails');
    expect(page.status).toBe(200);
    expect(page.text).toContain('aria-current="page">Emails<');
    const order = ['Never left', 'Reset your password', 'Your receipt'].map((subject) => page.text.indexOf(`>${subject}</a>`));
    expect(order.every((position) => position > 0)).toBe(true);
    expect(order).toEqual([...order].sort((a, b) => a - b));
    expect(page.text).toContain(`<a href="/dashboard/emails/${reset}">Reset your password</a>`);
    expect(page.text).toContain(escaped('Auth desk <auth@auth.example.com>'));
    expect(page.text).toContain('<span class="state failed">failed</span>');
    expect(page.text).not.toContain('Foreign subject');
    // Accessible: labelled filters, column headers.
    for (const label of [
      '<label for="filter-status">Status</label>',
      '<label for="filter-to">Recipient</label>',
      '<label for="filter-from">From',
    ])
      expect(page.text).toContain(label);
    expect(page.text).toContain('<th scope="col">Subject</th>');

    const subjects = async (query: string) => {
      const filtered = await client.get(`/dashboard/emails?${query}`);
      expect(filtered.status, query).toBe(200);
      return [...filtered.text.matchAll(/<a href="\/dashboard\/emails\/([a-f0-9]{24})">/g)].map((match) => match[1]);
    };
    expect(await subjects('status=failed')).toEqual([failed]);
    expect(await subjects('to=ADA%40example.com')).toEqual([reset, receipt]);
    expect(await subjects('from=shop.example.com')).toEqual([failed, receipt]);
    expect(await subjects('from=shop%40shop.example.com&status=sent')).toEqual([receipt]);
    expect(await subjects('status=&to=&from=')).toEqual([failed, reset, receipt]);
    // The form shows the filters it applied.
    expect((await client.get('/dashboard/emails?status=failed&to=cy%40example.com')).text).toMatch(
      /<option value="failed" selected>[\s\S]*value="cy@example.com"/,
    );

    const bad = await client.get('/dashboard/emails?to=not-an-address&status=lost');
    expect(bad.status).toBe(400);
    expect(bad.text).toContain('Status: must be one of');
    expect(bad.text).toContain('Recipient: must be an email address.');
    expect(bad.text).not.toContain('/dashboard/emails/');
  });

  it('pages through the log with an Older link that keeps the filters, each email once', async () => {
    const { org } = await createOrg(h.stack.orm);
    const seeds: SeedEmail[] = Array.from({ length: 55 }, (_, i) => ({
      subject: `Bulk ${i}`,
      fromEmail: 'bulk@bulk.example.com',
      createdAt: minutesAgo(120 - i),
      recipients: [{ email: `r${i}@example.com` }],
    }));
    seeds.push({
      subject: 'Other sender',
      fromEmail: 'other@other.example.com',
      createdAt: minutesAgo(1),
      recipients: [{ email: 'x@example.com' }],
    });
    const ids = await insertEmails(h, org.id, seeds);
    const client = await signIn(org.id);
    const idsOn = (text: string) => [...text.matchAll(/<a href="\/dashboard\/emails\/([a-f0-9]{24})">/g)].map((match) => match[1]);
    const older = (text: string) => {
      const href = /<a href="([^"]+)" rel="next">Older<\/a>/.exec(text)?.[1];
      return href === undefined ? undefined : decodeEntities(href);
    };

    const first = await client.get('/dashboard/emails?from=bulk.example.com');
    expect(idsOn(first.text)).toEqual(ids.slice(0, 55).reverse().slice(0, 50));
    expect(first.text).not.toContain('>Newest</a>');
    const next = older(first.text);
    expect(next).toMatch(/^\/dashboard\/emails\?from=bulk.example.com&older=\d+\.[a-f0-9]{24}$/);

    const second = await client.get(next!);
    expect(second.status).toBe(200);
    expect(idsOn(second.text)).toEqual(ids.slice(0, 5).reverse());
    expect(older(second.text)).toBeUndefined();
    expect(second.text).toContain(`<a href="${escaped('/dashboard/emails?from=bulk.example.com')}">Newest</a>`);
    // A position edited by hand is ignored (the first page), never another workspace's rows.
    expect(idsOn((await client.get('/dashboard/emails?older=garbage')).text)[0]).toBe(ids.at(-1));
  });

  it("shows one email with each recipient's timeline in order, the remote server's diagnostic with the bounce", async () => {
    const { org } = await createOrg(h.stack.orm);
    const t = (s: number) => new Date(Date.UTC(2026, 10, 24, 12, 0, s));
    const [id] = await insertEmails(h, org.id, [
      {
        subject: 'Welcome aboard',
        fromEmail: 'hello@welcome.example.com',
        fromName: 'Welcome team',
        createdAt: t(0),
        recipients: [
          { email: 'bob@example.com', status: 'complained', lastResponse: '250 2.0.0 OK queued as 12345', lastResponseCode: 250 },
          {
            email: 'ada@example.com',
            kind: 'cc',
            status: 'bounced',
            attempts: 2,
            lastResponse: '5.1.1 <ada@example.com>: Recipient address rejected: User unknown in virtual mailbox table',
            lastResponseCode: 550,
            bounceType: 'hard',
          },
        ],
        events: [
          // Written out of order: the page shows them oldest first.
          { type: 'complained', recipient: 'bob@example.com', occurredAt: t(50) },
          { type: 'sent', recipient: 'ada@example.com', occurredAt: t(3) },
          { type: 'bounced', recipient: 'ada@example.com', occurredAt: t(40) },
          { type: 'deferred', recipient: 'ada@example.com', occurredAt: t(10) },
          { type: 'delivered', recipient: 'bob@example.com', occurredAt: t(2) },
          { type: 'sent', recipient: 'bob@example.com', occurredAt: t(1) },
        ],
      },
    ]);
    const page = await (await signIn(org.id)).get(`/dashboard/emails/${id}`);
    expect(page.status).toBe(200);
    expect(page.text).toContain('<title>Welcome aboard · Herald</title>');
    expect(page.text).toContain(escaped('Welcome team <hello@welcome.example.com>'));
    expect(page.text).toContain('<time datetime="2026-11-24T12:00:00.000Z">2026-11-24 12:00:00 UTC</time>');

    const section = (address: string) => {
      const start = page.text.indexOf(`<h3 id="recipient-`, page.text.indexOf(`>${address} <small`) - 40);
      const end = page.text.indexOf('</section>', start);
      return page.text.slice(start, end);
    };
    const steps = (text: string) => [...text.matchAll(/<span class="event (\w+)">/g)].map((match) => match[1]);
    const bob = section('bob@example.com');
    const ada = section('ada@example.com');
    expect(steps(bob)).toEqual(['accepted', 'sent', 'delivered', 'complained']);
    expect(steps(ada)).toEqual(['accepted', 'sent', 'deferred', 'bounced']);
    expect(bob).toContain('<span class="state complained">complained</span>');
    expect(ada).toContain('(cc)');
    expect(ada).toContain('Delivery attempts: 2');
    // The bounce carries the remote server's reply (its code and text), escaped; the deferral before it has none stored.
    const bounce = ada.slice(ada.indexOf('<span class="event bounced">'));
    expect(bounce).toContain(
      `<code>550 ${escaped('5.1.1 <ada@example.com>: Recipient address rejected: User unknown in virtual mailbox table')}</code>`,
    );
    expect(bounce).toContain('(hard bounce)');
    expect(ada.slice(ada.indexOf('<span class="event deferred">'), ada.indexOf('<span class="event bounced">'))).not.toContain(
      'Remote server',
    );
    // bob's relay reply sits with the send (a code already leading the text is not repeated).
    expect(bob.slice(bob.indexOf('<span class="event sent">'), bob.indexOf('<span class="event delivered">'))).toContain(
      '<code>250 2.0.0 OK queued as 12345</code>',
    );
  });

  it("answers 404 for another workspace's email or an id that is none", async () => {
    const { org } = await createOrg(h.stack.orm);
    const [foreign] = await insertEmails(h, org.id, [
      { subject: "Somebody else's", createdAt: minutesAgo(3), recipients: [{ email: 'ada@example.com' }] },
    ]);
    const client = await signIn(h.workspace.org.id);
    for (const path of [`/dashboard/emails/${foreign}`, '/dashboard/emails/000000000000000000000000', '/dashboard/emails/nope']) {
      const page = await client.get(path);
      expect(page.status, path).toBe(404);
      expect(page.text, path).toContain('This workspace has no such email.');
      expect(page.text, path).not.toContain('Somebody else');
    }
  });

  it('renders subjects, names and diagnostics as text, never markup', async () => {
    const { org } = await createOrg(h.stack.orm);
    const [id] = await insertEmails(h, org.id, [
      {
        subject: '<script>alert("subject")</script>',
        fromName: '<img src=x onerror=alert(1)>',
        createdAt: minutesAgo(2),
        recipients: [
          {
            email: 'ada@example.com',
            status: 'bounced',
            lastResponse: '550 <script>alert("diag")</script>',
            lastResponseCode: 550,
            bounceType: 'hard',
          },
        ],
        events: [{ type: 'bounced', recipient: 'ada@example.com', occurredAt: minutesAgo(1) }],
      },
    ]);
    const client = await signIn(org.id);
    for (const path of ['/dashboard/emails', `/dashboard/emails/${id}`]) {
      const page = await client.get(path);
      expect(page.status, path).toBe(200);
      expect(page.text, path).not.toContain('<script>alert');
      expect(page.text, path).not.toContain('<img src=x');
      expect(page.text, path).toContain(escaped('<script>alert("subject")</script>'));
    }
    expect((await client.get(`/dashboard/emails/${id}`)).text).toContain(escaped('550 <script>alert("diag")</script>'));
  });
});
