import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ContactEvent, EmailRecipient, InboundMessage, Template, TransactionalEmail } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { parseDefinition, type AutomationDefinition } from '../../src/modules/automations/automation-definition.ts';
import { readStats } from '../../src/modules/automations/automation-stats.repo.ts';
import { createAutomationsAdmin } from '../../src/modules/automations/automations.admin.ts';
import { createTrackingCounter } from '../../src/modules/broadcasts/tracking-counter.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { createInboundIngestion } from '../../src/modules/inbound/ingestion.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient, expectError, fieldsOf, type ApiResponse } from '../support/http.ts';
import { runContactImport } from '../support/contact-imports.ts';

type Trigger = AutomationDefinition['trigger'];
type Reentry = AutomationDefinition['reentry'];

interface RunRow {
  id: string;
  contact_id: string;
  status: string;
  step_id: string | null;
  waiting_for: string | null;
  due_at: string | Date | null;
  context: Record<string, unknown>;
}

function expectStatus(response: ApiResponse, status: number): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
}

/**
 * Triggers start runs in the transaction of the change that fires them: contacts created,
 * tags added, segments joined (by tags, membership or import), custom events (POST /events),
 * first opens and clicks, replies; events resume runs waiting for them. No worker runs here:
 * runs stay as enrolment wrote them.
 */
describe('automation triggers', () => {
  let h: ApiHarness;
  let blobDir: string;
  let blobs: BlobStore;

  beforeAll(async () => {
    h = await startApiHarness();
    blobDir = await mkdtemp(join(tmpdir(), 'herald-triggers-'));
    blobs = createFsBlobStore(blobDir);
  });
  afterAll(async () => {
    await h?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  /** A workspace of its own, so automations of one test never see another's contacts. */
  async function workspace() {
    const created = await createOrgWithKey(h.stack.orm, { scopes: ['all'], rateLimitPerMinute: 100_000, burst: 10_000 });
    const request = apiClient(h.api.url, created.key);
    return {
      orgId: created.org.id,
      request,
      async contact(body: Record<string, unknown> = {}): Promise<string> {
        const response = await request('POST', '/api/v1/contacts', {
          headers: idem(),
          body: { email: `${unique('c')}@example.com`, ...body },
        });
        expectStatus(response, 201);
        return (response.body.data as { _id: string })._id;
      },
      async patch(id: string, body: Record<string, unknown>): Promise<void> {
        expectStatus(await request('PATCH', `/api/v1/contacts/${id}`, { headers: idem(), body }), 200);
      },
      event: (body: Record<string, unknown>, headers = idem()) => request('POST', '/api/v1/events', { headers, body }),
    };
  }

  /** An active automation on a published definition, as the publisher would leave it (one exit step). */
  async function automation(orgId: string, trigger: Trigger, reentry: Reentry = { mode: 'once' }, status = 'active'): Promise<string> {
    const parsed = parseDefinition({ trigger, reentry, start: 'done', steps: [{ id: 'done', type: 'exit' }] });
    if (!parsed.ok) throw new Error(JSON.stringify(parsed.problems));
    // Published through the operator's path (the definition names nothing in the database).
    const created = await createAutomationsAdmin({ orm: h.stack.orm }).createAutomation({
      orgId,
      name: unique('automation'),
      definition: parsed.definition,
      status,
    });
    return created.id;
  }

  const runsOf = (automationId: string) =>
    h.stack.orm.em
      .fork()
      .execute<RunRow[]>(
        `select id, contact_id, status, step_id, waiting_for, due_at, context from automation_runs where automation_id = ? order by created_at, id`,
        [automationId],
      );

  const contactsOf = async (automationId: string) => (await runsOf(automationId)).map((run) => run.contact_id);

  /** The automation's counters: `runs` started, all still active. */
  async function expectStats(orgId: string, automationId: string, runs: number): Promise<void> {
    const stats = (await readStats(h.stack.orm.em.fork(), orgId, [automationId])).get(automationId);
    expect(stats).toMatchObject({ totalRuns: runs, activeRuns: runs });
  }

  /** `runs` runs, and counted as such. */
  async function expectCounted(orgId: string, automationId: string, runs: number): Promise<void> {
    expect(await runsOf(automationId)).toHaveLength(runs);
    await expectStats(orgId, automationId, runs);
  }

  /** A run of `automationId` for the contact waiting for `key`, due in three days. */
  async function waitingRun(orgId: string, automationId: string, contactId: string, key: string): Promise<string> {
    const id = newId();
    await h.stack.orm.em.fork().execute(
      `insert into automation_runs (id, org_id, automation_id, definition_id, contact_id, status, step_id, due_at, waiting_for, context, created_at, updated_at)
       select ?, a.org_id, a.id, a.definition_id, ?, 'active', 'done', now() + interval '3 days', ?, '{}', now(), now() from automations a where a.id = ? and a.org_id = ?`,
      [id, contactId, key, automationId, orgId],
    );
    return id;
  }

  const runById = async (id: string) =>
    (await h.stack.orm.em.fork().execute<RunRow[]>(`select * from automation_runs where id = ?`, [id]))[0]!;

  function expectResumed(run: RunRow, key: string): void {
    expect(run.waiting_for).toBeNull();
    expect(new Date(run.due_at!).getTime()).toBeLessThanOrEqual(Date.now());
    expect(run.context.heard).toMatchObject({ key });
  }

  describe('contacts', () => {
    it('a contact created starts a run of each active contact.created automation, due now, counted', async () => {
      const w = await workspace();
      const active = await automation(w.orgId, { type: 'contact.created' });
      const paused = await automation(w.orgId, { type: 'contact.created' }, { mode: 'once' }, 'paused');
      const contactId = await w.contact();
      const [run] = await runsOf(active);
      expect(run).toMatchObject({ contact_id: contactId, status: 'active', step_id: 'done', waiting_for: null });
      expect(new Date(run!.due_at!).getTime()).toBeLessThanOrEqual(Date.now());
      await expectCounted(w.orgId, active, 1);
      expect(await runsOf(paused)).toEqual([]);
    });

    it('tag.added fires for a tag a contact did not carry (on create and PATCH), never for one it carries', async () => {
      const w = await workspace();
      const vip = await automation(w.orgId, { type: 'tag.added', tag: 'vip' }, { mode: 'always' });
      const tagged = await w.contact({ tags: ['vip'] });
      const plain = await w.contact();
      await w.patch(plain, { tags: ['vip'] });
      await w.patch(plain, { tags: ['vip', 'other'] });
      await w.patch(plain, { first_name: 'Ada' });
      expect(await contactsOf(vip)).toEqual([tagged, plain]);
      await w.patch(plain, { tags: [] });
      await w.patch(plain, { tags: ['vip'] });
      await expectCounted(w.orgId, vip, 3);
    });

    it('segment.joined fires when a contact newly matches a tag segment, not while it still matches', async () => {
      const w = await workspace();
      const segment = await w.request('POST', '/api/v1/segments', { headers: idem(), body: { name: unique('s'), tags: ['a', 'b'] } });
      expectStatus(segment, 201);
      const segmentId = (segment.body.data as { _id: string })._id;
      const joined = await automation(w.orgId, { type: 'segment.joined', segment_id: segmentId }, { mode: 'always' });
      const contactId = await w.contact({ tags: ['a'] });
      await w.patch(contactId, { tags: ['a', 'b'] });
      await w.patch(contactId, { tags: ['x'] });
      expect(await contactsOf(joined)).toEqual([contactId]);
      await w.patch(contactId, { tags: ['x', 'b'] });
      await expectCounted(w.orgId, joined, 2);
    });

    it('segment.joined fires for contacts newly added to a static segment only', async () => {
      const w = await workspace();
      const segment = await w.request('POST', '/api/v1/segments', { headers: idem(), body: { name: unique('s'), type: 'static' } });
      const segmentId = (segment.body.data as { _id: string })._id;
      const joined = await automation(w.orgId, { type: 'segment.joined', segment_id: segmentId }, { mode: 'always' });
      const [first, second] = [await w.contact(), await w.contact()];
      const add = (ids: string[]) =>
        w.request('POST', `/api/v1/segments/${segmentId}/contacts`, { headers: idem(), body: { contact_ids: ids } });
      expectStatus(await add([first]), 200);
      expectStatus(await add([first, second]), 200);
      expect((await contactsOf(joined)).sort()).toEqual([first, second].sort());
      await expectCounted(w.orgId, joined, 2);
    });

    it('an import enrols its page of contacts: created, tags added and the static segment joined', async () => {
      const w = await workspace();
      const existing = await w.contact({ email: 'old@example.com', tags: ['vip'] });
      const segment = await w.request('POST', '/api/v1/segments', { headers: idem(), body: { name: unique('s'), type: 'static' } });
      const segmentId = (segment.body.data as { _id: string })._id;
      const created = await automation(w.orgId, { type: 'contact.created' });
      const vip = await automation(w.orgId, { type: 'tag.added', tag: 'vip' }, { mode: 'always' });
      const joined = await automation(w.orgId, { type: 'segment.joined', segment_id: segmentId });
      const { ran } = await runContactImport({
        orm: h.stack.orm,
        blobs,
        orgId: w.orgId,
        csv: 'email,tags\nold@example.com,vip;new\nnew1@example.com,vip\nnew2@example.com,\n',
        filename: 'triggers.csv',
        segmentId,
      });
      expect(ran).toMatchObject({ status: 'completed', created: 2, updated: 1 });
      const em = scopeToOrg(h.stack.orm.em.fork(), w.orgId);

      const ids = await em.fork().execute<{ id: string; email: string }[]>(`select id, email from contacts where org_id = ?`, [w.orgId]);
      const idOf = (email: string) => ids.find((c) => c.email === email)!.id;
      expect((await contactsOf(created)).sort()).toEqual([idOf('new1@example.com'), idOf('new2@example.com')].sort());
      // The existing contact carried vip already: only `new` was added to it.
      expect(await contactsOf(vip)).toEqual([idOf('new1@example.com')]);
      expect((await contactsOf(joined)).sort()).toEqual([existing, idOf('new1@example.com'), idOf('new2@example.com')].sort());
      await expectCounted(w.orgId, joined, 3);
    });
  });

  describe('POST /api/v1/events', () => {
    it('records the event (202) and starts the event automations of its name, with its properties', async () => {
      const w = await workspace();
      const signup = await automation(w.orgId, { type: 'event', name: 'trial.started' });
      const other = await automation(w.orgId, { type: 'event', name: 'order.paid' });
      const contactId = await w.contact({ email: 'Grace@Example.com' });
      const response = await w.event({ event: 'trial.started', email: 'Grace@EXAMPLE.com', properties: { plan: 'pro', seats: 3 } });
      expectStatus(response, 202);
      expect(response.body.data).toStrictEqual({
        _id: expect.stringMatching(/^[a-f0-9]{24}$/),
        event: 'trial.started',
        contact_id: contactId,
        properties: { plan: 'pro', seats: 3 },
        runs_started: 1,
        automations_resumed: 0,
        created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT.*Z$/),
      });
      const [run] = await runsOf(signup);
      expect(run?.context).toMatchObject({ trigger: { type: 'event', properties: { plan: 'pro', seats: 3 } } });
      await expectCounted(w.orgId, signup, 1);
      expect(await runsOf(other)).toEqual([]);
      const stored = await scopeToOrg(h.stack.orm.em.fork(), w.orgId).find(ContactEvent, { contactId });
      expect(stored).toMatchObject([{ name: 'trial.started', properties: { plan: 'pro', seats: 3 } }]);
    });

    it('re-entry: once admits a contact once, always every time, cooldown again after the cool-down', async () => {
      const w = await workspace();
      const once = await automation(w.orgId, { type: 'event', name: 'visit' });
      const always = await automation(w.orgId, { type: 'event', name: 'visit' }, { mode: 'always' });
      const cooldown = await automation(w.orgId, { type: 'event', name: 'visit' }, { mode: 'cooldown', cooldown: '1h' });
      const contactId = await w.contact();
      expect((await w.event({ event: 'visit', contact_id: contactId })).body.data).toMatchObject({ runs_started: 3 });
      expect((await w.event({ event: 'visit', contact_id: contactId })).body.data).toMatchObject({ runs_started: 1 });
      await h.stack.orm.em
        .fork()
        .execute(`update automation_enrolments set last_enrolled_at = now() - interval '2 hours' where automation_id = ? and org_id = ?`, [
          cooldown,
          w.orgId,
        ]);
      expect((await w.event({ event: 'visit', contact_id: contactId })).body.data).toMatchObject({ runs_started: 2 });
      await expectCounted(w.orgId, once, 1);
      await expectCounted(w.orgId, always, 3);
      await expectCounted(w.orgId, cooldown, 2);
    });

    it("makes the contact's runs waiting for the event due now, and only those", async () => {
      const w = await workspace();
      const waiting = await automation(w.orgId, { type: 'contact.created' });
      const contactId = await w.contact();
      const otherId = await w.contact();
      const [enrolled] = await runsOf(waiting);
      await h.stack.orm.em.fork().execute(`delete from automation_runs where id = ?`, [enrolled!.id]);
      const run = await waitingRun(w.orgId, waiting, contactId, 'event:foo');
      const elsewhere = await waitingRun(w.orgId, waiting, otherId, 'event:foo');
      const response = await w.event({ event: 'foo', contact_id: contactId, properties: { n: 1 } });
      expect(response.body.data).toMatchObject({ runs_started: 0, automations_resumed: 1 });
      expectResumed(await runById(run), 'event:foo');
      expect((await runById(run)).context.heard).toMatchObject({ detail: { properties: { n: 1 } } });
      expect(await runById(elsewhere)).toMatchObject({ waiting_for: 'event:foo' });
    });

    it('records for a contact that is not active', async () => {
      const w = await workspace();
      const contactId = await w.contact();
      await w.patch(contactId, { status: 'unsubscribed' });
      expectStatus(await w.event({ event: 'came.back', contact_id: contactId }), 202);
    });

    it('replays the answer for the same Idempotency-Key, recording once', async () => {
      const w = await workspace();
      const always = await automation(w.orgId, { type: 'event', name: 'paid' }, { mode: 'always' });
      const contactId = await w.contact();
      const headers = idem();
      const first = await w.event({ event: 'paid', contact_id: contactId }, headers);
      const again = await w.event({ event: 'paid', contact_id: contactId }, headers);
      expectStatus(again, 202);
      expect(again.body.data).toEqual(first.body.data);
      expect(await scopeToOrg(h.stack.orm.em.fork(), w.orgId).count(ContactEvent, { contactId })).toBe(1);
      await expectCounted(w.orgId, always, 1);
    });

    it('answers 404 for a contact the workspace does not have', async () => {
      const w = await workspace();
      const foreign = await (await workspace()).contact();
      expectError(await w.event({ event: 'x', contact_id: foreign }), 404, 'not_found');
      expectError(await w.event({ event: 'x', email: 'nobody@example.com' }), 404, 'not_found');
    });

    it.each([
      ['a bad name', { event: 'has space', email: 'a@example.com' }, 'event'],
      ['an empty name', { event: '', email: 'a@example.com' }, 'event'],
      ['a name of 101 characters', { event: 'e'.repeat(101), email: 'a@example.com' }, 'event'],
      ['both email and contact_id', { event: 'x', email: 'a@example.com', contact_id: '0123456789abcdef01234567' }, 'email'],
      ['neither email nor contact_id', { event: 'x' }, 'email'],
      ['properties that are not an object', { event: 'x', email: 'a@example.com', properties: [1] }, 'properties'],
      ['properties over 10 KB', { event: 'x', email: 'a@example.com', properties: { big: 'x'.repeat(10_240) } }, 'properties'],
    ])('answers 400 for %s', async (_name, body, field) => {
      const response = await h.request('POST', '/api/v1/events', { headers: idem(), body });
      expectError(response, 400, 'invalid_request');
      expect(fieldsOf(response).map((problem) => problem.path)).toContain(field);
    });

    it('answers 403 without the events:write scope', async () => {
      const narrow = await createOrgWithKey(h.stack.orm, { scopes: ['contacts:write', 'contacts:read'] });
      const response = await h.request('POST', '/api/v1/events', {
        key: narrow.key,
        headers: idem(),
        body: { event: 'x', email: 'a@example.com' },
      });
      expectError(response, 403, 'missing_scope');
      expect(response.body.error?.details).toEqual({ required_scope: 'events:write' });
    });
  });

  describe('email events', () => {
    /** A broadcast message sent to the contact (from a template), with its one recipient. */
    async function sentEmail(orgId: string, contact: { id: string; email: string }, messageId = `${newId()}@mail.example.com`) {
      const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
      // A template of the workspace: a trigger naming it must name a real one.
      const template = em.create(Template, { orgId, name: unique('template'), status: 'published', subject: 'News', html: '<p>News</p>' });
      const email = em.create(TransactionalEmail, {
        orgId,
        domainId: newId(),
        domain: 'mail.example.com',
        fromEmail: 'news@mail.example.com',
        subject: 'News',
        text: 'Hello',
        messageId,
        status: 'sent',
        quotaDay: new Date().toISOString().slice(0, 10),
        broadcastId: newId(),
        templateId: template.id,
        contactId: contact.id,
      });
      em.create(EmailRecipient, { orgId, emailId: email.id, kind: 'to', email: contact.email });
      await em.flush();
      return email;
    }

    const hit = (orgId: string, email: TransactionalEmail, kind: 'open' | 'click') =>
      h.stack.orm.em.fork().execute(
        `insert into tracking_hits (id, org_id, email_id, broadcast_id, kind, url, user_agent, state, at)
         values (?, ?, ?, ?, ?, ?, null, 'pending', now() - interval '5 seconds')`,
        [newId(), orgId, email.id, email.broadcastId, kind, kind === 'click' ? 'https://example.com/a' : null],
      );

    it("a first open starts email.opened automations (any email, the broadcast's, the template's) and resumes runs waiting for it", async () => {
      const w = await workspace();
      const contact = { id: await w.contact({ email: 'reader@example.com' }), email: 'reader@example.com' };
      const email = await sentEmail(w.orgId, contact);
      const any = await automation(w.orgId, { type: 'email.opened' }, { mode: 'always' });
      const byBroadcast = await automation(w.orgId, { type: 'email.opened', broadcast_id: email.broadcastId! });
      const byTemplate = await automation(w.orgId, { type: 'email.opened', template_id: email.templateId! });
      const otherBroadcast = await automation(w.orgId, { type: 'email.opened', broadcast_id: newId() });
      const clicked = await automation(w.orgId, { type: 'email.clicked' });
      const waiting = await waitingRun(w.orgId, clicked, contact.id, `email.opened:${email.id}`);

      const counter = createTrackingCounter({ orm: h.stack.orm });
      await hit(w.orgId, email, 'open');
      await counter.pass({ signal: new AbortController().signal, warn: () => {} });
      await hit(w.orgId, email, 'open');
      await counter.pass({ signal: new AbortController().signal, warn: () => {} });
      for (const id of [any, byBroadcast, byTemplate]) expect(await contactsOf(id)).toEqual([contact.id]);
      expect(await runsOf(otherBroadcast)).toEqual([]);
      await expectCounted(w.orgId, any, 1);
      expectResumed(await runById(waiting), `email.opened:${email.id}`);
      // No click: the clicked automation holds only the run that waited.
      expect(await runsOf(clicked)).toHaveLength(1);
    });

    it("a reply to an email Herald sent starts email.replied for the sender's contact and resumes runs waiting for it", async () => {
      const w = await workspace();
      const domain = `${unique('replies')}.example`.toLowerCase();
      await createDomainsService({ orm: h.stack.orm, encryptionKey: h.stack.config.encryptionKey }).addDomain({
        orgId: w.orgId,
        domain,
        verified: true,
      });
      const contact = { id: await w.contact({ email: 'ann@example.com' }), email: 'ann@example.com' };
      const email = await sentEmail(w.orgId, contact, `${newId()}@${domain}`);
      const replied = await automation(w.orgId, { type: 'email.replied' });
      const waiting = await waitingRun(w.orgId, replied, contact.id, `email.replied:${email.id}`);

      const raw = Buffer.from(
        [
          'From: Ann <ann@EXAMPLE.com>',
          `To: news@${domain}`,
          'Subject: Re: News',
          `Message-ID: <${newId()}@remote.example>`,
          `In-Reply-To: <${email.messageId}>`,
          'Date: Fri, 27 Nov 2026 10:00:00 +0000',
          '',
          'Thanks!',
          '',
        ].join('\r\n'),
      );
      const blobKey = `inbound/${newId()}.eml`;
      await blobs.put(blobKey, raw);
      const em = h.stack.orm.em.fork();
      const inbound = em.create(InboundMessage, {
        blobKey,
        sizeBytes: raw.length,
        sha256: createHash('sha256').update(raw).digest('hex'),
        mailFrom: 'ann@EXAMPLE.com',
        rcptTo: [`news@${domain}`],
        remoteAddress: '127.0.0.1',
      });
      await em.flush();
      const ingestion = createInboundIngestion({ orm: h.stack.orm, blobs, config: h.stack.config });
      expect(await ingestion.recordMessages(inbound.id)).toMatchObject({ status: 'recorded', orgIds: [w.orgId] });

      expect((await runsOf(replied)).map((run) => run.contact_id)).toEqual([contact.id, contact.id]);
      expectResumed(await runById(waiting), `email.replied:${email.id}`);
      await expectStats(w.orgId, replied, 1);
    });
  });
});
