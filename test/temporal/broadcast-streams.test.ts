import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, Organization, Segment, StreamDailySend, Suppression, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startMailSink, type MailSink, type SinkMessage } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { countAudience } from '../../src/modules/broadcasts/broadcast-send.repo.ts';
import { utcDay } from '../../src/modules/sends/sends.fns.ts';
import { createStreamsService } from '../../src/modules/streams/streams.service.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { unique } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';

type BroadcastBody = { _id: string; status: string; stream: string; metrics: { recipients: number; sent: number } };

/**
 * A broadcast on a custom message stream: its messages carry the stream, the audience leaves out
 * addresses suppressed for that stream (and not those suppressed for the built-in broadcast
 * stream only), and the stream's daily budget caps what is queued today.
 */
describe('broadcasts on a custom message stream', () => {
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let orgId: string;
  const em = () => scopeToOrg(h.stack.orm.em.fork(), orgId);

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
  const getBroadcast = async (id: string) => (await h.request('GET', `/api/v1/outbox/broadcasts/${id}`)).body.data as BroadcastBody;
  const messagesTo = (emails: string[]): SinkMessage[] => sink.messages().filter((m) => m.rcptTo.some((r) => emails.includes(r)));

  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    h = await startApiHarness(
      { SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`, SMTP_RELAY_FINAL_HOP: 'true', BOUNCE_DOMAIN: 'bounces.herald.test' },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    orgId = h.workspace.org.id;
    await h.stack.orm.em.fork().nativeUpdate(Organization, { id: orgId }, { postalAddress: 'The Shop, 1 Market Street, Springfield' });
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await h?.close();
    await sink?.close();
  });

  it('queues messages in the stream, honours its suppression scope and stops at its daily budget until cancelled', async () => {
    const stream = unique('news')
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '-');
    await createStreamsService({ orm: h.stack.orm }).createStream(orgId, { name: stream, kind: 'broadcast', daily_cap: 2 });
    const domain = await addSendingDomain(h.stack.orm, orgId);
    const tag = unique('streamed');
    const scoped = em();
    const segment = scoped.create(Segment, { orgId, name: unique('segment'), type: 'tag', tags: [tag] });
    const emails = ['a', 'b', 'c', 'blocked', 'other-stream'].map((n) => `${n}-${tag}@example.com`.toLowerCase());
    for (const email of emails) scoped.create(Contact, { orgId, email, tags: [tag] });
    // Unsubscribed from this stream: left out. Unsubscribed from the built-in broadcast stream only: still in.
    scoped.create(Suppression, { orgId, email: emails[3]!, reason: 'unsubscribe', stream });
    scoped.create(Suppression, { orgId, email: emails[4]!, reason: 'unsubscribe', stream: 'broadcast' });
    await scoped.flush();

    const created = await h.request('POST', '/api/v1/outbox/broadcasts', {
      headers: idem(),
      body: {
        name: 'Streamed',
        subject: 'Hi',
        from_name: 'Shop',
        from_email: `news@${domain.domain}`,
        segment_ids: [segment.id],
        html: '<p>Hi</p>',
        stream,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = (created.body.data as BroadcastBody)._id;
    const launched = await h.request('POST', `/api/v1/outbox/broadcasts/${id}/send`, { headers: idem(), body: {} });
    expect(launched.status, JSON.stringify(launched.body)).toBe(202);

    await until(
      'two messages at the relay',
      () => Promise.resolve(messagesTo(emails).length),
      (n) => n >= 2,
    );
    const queued = await until(
      'two messages queued',
      () => em().find(TransactionalEmail, { broadcastId: id }),
      (rows) => rows.length >= 2,
    );
    // The budget is spent: no third message today, and the broadcast waits (still sending).
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    const rows = await em().find(TransactionalEmail, { broadcastId: id });
    expect(rows, JSON.stringify(queued.map((r) => r.id))).toHaveLength(2);
    expect(rows.map((r) => [r.stream, r.streamKind])).toEqual([
      [stream, 'broadcast'],
      [stream, 'broadcast'],
    ]);
    expect(messagesTo(emails)).toHaveLength(2);
    const counter = await em().findOneOrFail(StreamDailySend, { stream, day: utcDay(new Date()) });
    expect(counter.count).toBe(2);
    const waiting = await getBroadcast(id);
    expect(waiting).toMatchObject({ status: 'sending', stream, metrics: { recipients: 2 } });

    // Cancelling ends the wait for tomorrow's budget at once.
    const cancelled = await h.request('POST', `/api/v1/outbox/broadcasts/${id}/cancel`, { headers: idem(), body: {} });
    expect(cancelled.status, JSON.stringify(cancelled.body)).toBe(200);
    expect((await getBroadcast(id)).status).toBe('cancelled');
    const reached = messagesTo(emails).flatMap((m) => m.rcptTo);
    expect(reached).not.toContain(emails[3]);
  });

  it("counts the audience without the addresses suppressed for the broadcast's stream", async () => {
    const stream = unique('alerts')
      .toLowerCase()
      .replace(/[^a-z0-9_-]/g, '-');
    await createStreamsService({ orm: h.stack.orm }).createStream(orgId, { name: stream, kind: 'broadcast' });
    const tag = unique('counted');
    const scoped = em();
    const segment = scoped.create(Segment, { orgId, name: unique('segment'), type: 'tag', tags: [tag] });
    const emails = ['x', 'y', 'z'].map((n) => `${n}-${tag}@example.com`.toLowerCase());
    for (const email of emails) scoped.create(Contact, { orgId, email, tags: [tag] });
    scoped.create(Suppression, { orgId, email: emails[0]!, reason: 'unsubscribe', stream });
    scoped.create(Suppression, { orgId, email: emails[1]!, reason: 'unsubscribe', stream: 'broadcast' });
    await scoped.flush();
    const count = (streamName?: string) => countAudience(em(), orgId, [segment.id], new Date(), streamName);
    expect(await count(stream)).toBe(2);
    expect(await count()).toBe(2);
    expect(await count('no-such-stream')).toBe(3);
  });
});
