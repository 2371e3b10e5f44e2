import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, InboxMessage, Organization, Segment, Suppression, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { createApiKeysService } from '../../src/modules/auth/api-keys.service.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { apiClient, type ApiResponse } from '../support/http.ts';
import { unique } from '../support/factories.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { insertEndpoint } from '../support/webhook-rows.ts';
import type { Domain } from '../../db/entities/index.ts';

type Recipient = { email: string; status: string; bounce_type: string | null; last_response?: string | null };
type EmailRecord = { _id: string; status: string; recipients: Recipient[] };

const SIM = 'simulator.herald.test';

/**
 * Test keys are a sandbox: the whole pipeline runs (acceptance, the domain's actor, building,
 * DKIM, composing, recording, events), but the message ends at the sandbox relay, which answers
 * as the mailbox simulator does; the configured relay never sees it. Live keys deliver.
 */
describe('sends with a test key stay in the sandbox; live keys deliver', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let h: ApiHarness;
  let worker: RunningWorker;
  let domain: Domain;
  let live: ReturnType<typeof apiClient>;
  let blobDir: string;

  const accepted = (response: ApiResponse) => {
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    return response.body.data as EmailRecord;
  };
  const send = async (client: ReturnType<typeof apiClient>, to: string, subject = 'Sandbox') =>
    accepted(
      await client('POST', '/api/v1/outbox/emails', {
        body: { from: `Shop <shop@${domain.domain}>`, to, subject, text: 'Hello' },
        headers: idem(),
      }),
    );
  async function until(id: string, done: (email: EmailRecord) => boolean): Promise<EmailRecord> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const email = (await h.request('GET', `/api/v1/outbox/emails/${id}`)).body.data as EmailRecord;
      if (done(email)) return email;
      if (Date.now() > deadline) throw new Error(`email ${id} never got there: ${JSON.stringify(email)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  beforeAll(async () => {
    relay = await startCountingRelay();
    blobDir = await mkdtemp(join(tmpdir(), 'herald-sandbox-'));
    h = await startApiHarness({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_FINAL_HOP: 'false',
      BOUNCE_DOMAIN: 'bounces.herald.test',
      BLOB_DIR: blobDir,
      SEND_HANDOFF_WAIT_MS: '0',
      EMAIL_RETRY_SCHEDULE: '0s,300ms',
      EMAIL_RETRY_WINDOW: '10s',
    });
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    domain = await addSendingDomain(h.stack.orm, h.workspace.org.id);
    await setCredits(h.stack.orm, h.workspace.org.id, 1000);
    await insertEndpoint(h.stack.orm, h.workspace.org.id, {
      url: 'http://127.0.0.1:9/hook',
      events: ['email.sent', 'email.delivered', 'email.bounced', 'email.complained'],
    });
    const { key } = await createApiKeysService({ orm: h.stack.orm }).createApiKey({
      orgId: h.workspace.org.id,
      scopes: ['all'],
      mode: 'live',
      rateLimitPerMinute: 100_000,
      burst: 10_000,
    });
    live = apiClient(h.api.url, key);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await relay?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it("delivers a test key's email to the sandbox (delivered, the relay never sees it), and a live key's to the relay", async () => {
    expect(h.workspace.apiKey.mode).toBe('test');
    const sandboxed = await send(h.request, 'customer@example.com', 'From a test key');
    const done = await until(sandboxed._id, (e) => e.status === 'sent');
    expect(done.recipients[0]).toMatchObject({ email: 'customer@example.com', status: 'delivered' });
    expect(done.recipients[0]!.last_response).toMatch(/sandbox/);

    const delivered = await send(live, 'customer@example.com', 'From a live key');
    const sent = await until(delivered._id, (e) => e.status === 'sent');
    // This relay is not the final hop: accepted means sent.
    expect(sent.recipients[0]).toMatchObject({ status: 'sent' });
    expect(relay.total()).toBe(1);
    expect([...relay.accepted.keys()]).toEqual([expect.stringContaining(delivered._id)]);
  });

  it('answers as the mailbox simulator: bounce@ is a hard bounce (suppressed), softbounce@ is deferred then delivered, reject@ fails', async () => {
    const bounce = await send(h.request, `bounce@${SIM}`);
    expect((await until(bounce._id, (e) => e.status !== 'queued' && e.status !== 'sending')).recipients[0]).toMatchObject({
      status: 'bounced',
      bounce_type: 'hard',
    });
    expect(await scopeToOrg(h.stack.orm.em, h.workspace.org.id).count(Suppression, { email: `bounce@${SIM}`, reason: 'hard_bounce' })).toBe(
      1,
    );

    const soft = await send(h.request, `softbounce@${SIM}`);
    expect((await until(soft._id, (e) => e.status === 'sent')).recipients[0]).toMatchObject({ status: 'delivered' });

    const reject = await send(h.request, `reject@${SIM}`);
    expect((await until(reject._id, (e) => e.status === 'failed')).recipients[0]).toMatchObject({ status: 'failed' });
    expect(relay.total()).toBe(1);
  });

  it('turns complaint@ into email.complained through the inbound pipeline (an ARF report to the signed return path)', async () => {
    const complaint = await send(h.request, `complaint@${SIM}`);
    const done = await until(complaint._id, (e) => e.recipients[0]?.status === 'complained');
    expect(done.recipients[0]).toMatchObject({ status: 'complained' });
    const em = scopeToOrg(h.stack.orm.em, h.workspace.org.id);
    expect(await em.count(Suppression, { email: `complaint@${SIM}`, reason: 'complaint' })).toBe(1);
    expect(await em.count(InboxMessage, { kind: 'complaint' })).toBe(1);
    expect(await em.count(Contact, { email: `complaint@${SIM}` })).toBeLessThanOrEqual(1);
    expect(relay.total()).toBe(1);
  });

  it('keeps a broadcast launched with a test key in the sandbox too; one launched with a live key reaches the relay', async () => {
    const orgId = h.workspace.org.id;
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    await h.stack.orm.em.fork().nativeUpdate(Organization, { id: orgId }, { postalAddress: 'The Shop, 1 Market Street, Springfield' });
    const tag = unique('sandboxed');
    const segment = em.create(Segment, { orgId, name: unique('segment'), type: 'tag', tags: [tag] });
    for (const name of ['ann', 'bob']) em.create(Contact, { orgId, email: `${name}-${tag}@example.com`.toLowerCase(), tags: [tag] });
    await em.flush();
    const before = relay.total();
    const launched: Record<string, string> = {};
    for (const [mode, client] of [
      ['test', h.request],
      ['live', live],
    ] as const) {
      const created = await client('POST', '/api/v1/outbox/broadcasts', {
        headers: idem(),
        body: {
          name: unique('News'),
          subject: 'News',
          from_name: 'The Shop',
          from_email: `news@${domain.domain}`,
          segment_ids: [segment.id],
          html: '<p>Hi</p>',
          plain_text: 'Hi',
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const id = (created.body.data as { _id: string })._id;
      const sent = await client('POST', `/api/v1/outbox/broadcasts/${id}/send`, { headers: idem(), body: {} });
      expect(sent.status, JSON.stringify(sent.body)).toBe(202);
      launched[mode] = id;
    }
    const settled = async (broadcastId: string) => {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const rows = await scopeToOrg(h.stack.orm.em.fork(), orgId).find(TransactionalEmail, { broadcastId });
        if (rows.length === 2 && rows.every((row) => row.status === 'sent')) return rows;
        if (Date.now() > deadline) throw new Error(`broadcast ${broadcastId} never settled: ${JSON.stringify(rows.map((r) => r.status))}`);
        await new Promise((resolve) => setTimeout(resolve, 150));
      }
    };
    expect((await settled(launched.test!)).map((row) => row.sandbox)).toEqual([true, true]);
    expect((await settled(launched.live!)).map((row) => row.sandbox)).toEqual([false, false]);
    expect(relay.total() - before).toBe(2);
  });
});
