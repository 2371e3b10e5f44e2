import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Domain, EgressAddressDay, TransactionalEmail } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { utcDay } from '../../src/modules/sends/sends.fns.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { startSourceRecordingSink } from '../support/source-recording-sink.ts';

type EmailRecord = { _id: string; message_id: string; status: string; recipients: { status: string }[] };

// Linux routes all of 127.0.0.0/8 to the loopback interface, so each of these is a source address of this host.
const EGRESS_POOLS = 'duo=127.0.0.2,127.0.0.3;warm=127.0.0.4,127.0.0.5';

describe("egress IP pools (API → Temporal → worker → relay from the pool's addresses)", () => {
  let sink: Awaited<ReturnType<typeof startSourceRecordingSink>>;
  let h: ApiHarness;
  let worker: RunningWorker;
  let orgId: string;

  async function pooledDomain(pool: string | null): Promise<string> {
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const em = h.stack.orm.em.fork();
    await em.nativeUpdate(Domain, { id: domain.id }, { ipPool: pool }, ALL_TENANTS);
    return domain.domain;
  }
  async function send(domain: string): Promise<EmailRecord> {
    const response = await h.request('POST', '/api/v1/outbox/emails', {
      body: { from: `Shop <shop@${domain}>`, to: ['someone@example.com'], subject: 'Pooled', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    return response.body.data as EmailRecord;
  }

  beforeAll(async () => {
    sink = await startSourceRecordingSink();
    h = await startApiHarness(
      { SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.port}`, SMTP_RELAY_FINAL_HOP: 'true', SMTP_RELAY_TLS: 'none', EGRESS_POOLS },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    orgId = h.workspace.org.id;
    await setCredits(h.stack.orm, orgId, 1000);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await sink?.close();
  });

  it("sends a pooled domain's mail from the pool's addresses in turn", async () => {
    const domain = await pooledDomain('duo');
    const sources: string[] = [];
    for (let i = 0; i < 4; i += 1) {
      const email = await send(domain);
      sources.push(await sink.sourceOf(email.message_id));
    }
    expect(new Set(sources)).toEqual(new Set(['127.0.0.2', '127.0.0.3']));
    for (let i = 1; i < sources.length; i += 1) expect(sources[i], JSON.stringify(sources)).not.toBe(sources[i - 1]);
  });

  it('sends the mail of a domain without a pool from the default source address', async () => {
    const domain = await pooledDomain(null);
    const email = await send(domain);
    expect(await sink.sourceOf(email.message_id)).toBe('127.0.0.1');
  });

  it("moves to the pool's next address when one reaches its warm-up cap, and holds the message once all have", async () => {
    const domain = await pooledDomain('warm');
    const today = utcDay(new Date());
    const em = h.stack.orm.em.fork();
    // Both addresses started today (warm-up day 1: 150 messages); .4 is used up, .5 has room for one.
    em.create(EgressAddressDay, { address: '127.0.0.4', day: today, sent: 150 });
    em.create(EgressAddressDay, { address: '127.0.0.5', day: today, sent: 149 });
    await em.flush();

    const first = await send(domain);
    expect(await sink.sourceOf(first.message_id)).toBe('127.0.0.5');

    const second = await send(domain);
    const deadline = Date.now() + 20_000;
    let row: TransactionalEmail | null = null;
    for (;;) {
      row = await h.stack.orm.em.fork().findOne(TransactionalEmail, { id: second._id }, ALL_TENANTS);
      if (row?.nextAttemptAt && row.nextAttemptAt.getTime() > Date.now() + 60_000) break;
      if (Date.now() > deadline) throw new Error(`the email was never held: ${JSON.stringify(row)}`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    // Waiting for the next UTC day, not failed, and never sent.
    const midnight = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate() + 1);
    expect(row.nextAttemptAt?.getTime()).toBe(midnight);
    const got = (await h.request('GET', `/api/v1/outbox/emails/${second._id}`)).body.data as EmailRecord;
    expect(got.status, JSON.stringify(got)).not.toBe('failed');
    expect(got.recipients.map((r) => r.status)).toEqual(['queued']);
    expect(sink.received.some((entry) => entry.messageId === second.message_id)).toBe(false);
    const counters = await h.stack.orm.em.fork().find(EgressAddressDay, { day: today, address: { $in: ['127.0.0.4', '127.0.0.5'] } });
    expect(Object.fromEntries(counters.map((c) => [c.address, c.sent]))).toEqual({ '127.0.0.4': 150, '127.0.0.5': 150 });
  });
});
