import { randomBytes } from 'node:crypto';
import { createTransport, type SentMessageInfo } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboundMessage, InboxAttachment, InboxMessage, WebhookAttempt, WebhookDelivery } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { IN_FLIGHT_PER_CONNECTION } from '../../src/modules/outbound/domain-drain.ts';
import { ABANDONED_ERROR } from '../../src/modules/webhooks/delivery-engine.ts';
import { CLAIM_BATCH } from '../../src/modules/webhooks/claim-ahead.ts';
import { RECORD_GROUP } from '../../src/modules/webhooks/endpoint-drain.ts';
import { idem } from '../support/api.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { spawnHeraldProcess, type HeraldProcess } from '../support/herald-process.ts';
import { apiClient } from '../support/http.ts';
import { createTestBucket, type TestBucket } from '../support/s3.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { insertSigningEndpoint } from '../support/webhook-rows.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Herald past one process of each kind (ARCHITECTURE: every process is stateless, actors hold
 * leases): two api, two worker and two smtp processes on one PostgreSQL, Redis, Temporal and
 * S3 bucket (BLOB_STORE=s3 on the run's SeaweedFS: the processes share no disk, so every raw
 * inbound message and attachment one process writes is read by another through the bucket).
 * During 1,000 sends, 1,000 webhook deliveries and 500 inbound messages (each with an
 * attachment), one process
 * of each kind is killed with SIGKILL. Clients do what real ones do with a dead server: the send
 * is retried on the other api with the same Idempotency-Key, the message on the other MX.
 * Afterwards every accepted item reached its end on the survivors, none twice beyond the window
 * that was in flight in the killed worker, and every inbound attachment is served byte for byte
 * from the bucket. How long each pipeline stood still after the worker kill is printed beside the
 * leases (30 s) that bound it: a figure, not an assertion (the machine's load decides it).
 */

const SENDS = 1_000;
const EVENTS = 1_000;
const INBOUND = 500;
const POOL = 5;
const INBOUND_DOMAIN = 'mx.multi.example';
const ATTACHMENT_BYTES = 2_048;
/** The row and drain leases the killed worker's claims lapse after (EMAIL_LEASE_SECONDS and its peers). */
const LEASE_SECONDS = 30;

/** Runs `work(i)` for i in [0, count) on `lanes` concurrent lanes. */
async function lanes(count: number, width: number, work: (index: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < count) await work(next++);
    }),
  );
}

/** A connection a killed server refused or cut: fetch's "fetch failed", nodemailer's socket errors. */
function isDeadServer(error: unknown): boolean {
  const code = (error as { code?: string }).code;
  return (
    (error instanceof TypeError && error.message === 'fetch failed') ||
    ['ECONNECTION', 'ESOCKET', 'ECONNRESET', 'ECONNREFUSED', 'EPIPE'].includes(code ?? '')
  );
}

/** Tries `attempt` on target `first`, then on the others in turn while the target is a dead server; other errors fail at once. */
async function withFailover<T>(
  targets: number,
  first: number,
  attempt: (target: number) => Promise<T>,
): Promise<{ value: T; tries: number }> {
  for (let tries = 1; ; tries += 1) {
    try {
      return { value: await attempt((first + tries - 1) % targets), tries };
    } catch (error) {
      if (!isDeadServer(error) || tries >= targets * 3) throw error;
    }
  }
}

/**
 * From `start()` to `stop()`, the longest time (seconds) each pipeline's progress counter stood
 * still while its work was unfinished: how long the killed worker's actors kept their work
 * before a survivor took it over (bounded by the leases, plus the load of the machine).
 */
function watchStalls(pipelines: Record<string, { total: number; done: () => Promise<number> }>) {
  const longest: Record<string, number> = Object.fromEntries(Object.keys(pipelines).map((name) => [name, 0]));
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  return {
    start() {
      const last = new Map<string, { count: number; at: number }>();
      const sample = async () => {
        const now = Date.now();
        for (const [name, { total, done }] of Object.entries(pipelines)) {
          const count = await done();
          const previous = last.get(name);
          if (!previous || count !== previous.count) last.set(name, { count, at: now });
          else if (count < total) longest[name] = Math.max(longest[name]!, (now - previous.at) / 1000);
        }
        if (!stopped) timer = setTimeout(() => void sample(), 500);
      };
      void sample();
    },
    stop(): Record<string, number> {
      stopped = true;
      clearTimeout(timer);
      return longest;
    },
  };
}

describe('two api, two worker and two smtp processes; one of each killed mid-flight', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let receiver: WebhookReceiver;
  let stack: TestStack;
  let bucket: TestBucket;
  const processes: HeraldProcess[] = [];

  beforeAll(async () => {
    relay = await startCountingRelay({ delayMs: 5 });
    receiver = await startWebhookReceiver();
    bucket = await createTestBucket('multi/');
    stack = await createTestStack({
      ...bucket.env,
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_POOL_SIZE: String(POOL),
      SMTP_RELAY_MAX_CONNECTIONS: String(POOL),
      WEBHOOK_RETRY_SCHEDULE: '0s,1s,1s,1s,1s',
    });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.service.stop()));
    await stack?.close();
    await receiver?.close();
    await relay?.close();
    await bucket?.drop();
  });

  it('loses nothing and repeats only what was in flight in the killed worker', async () => {
    expect(stack.config.blobStore?.kind).toBe('s3');
    const { org, key } = await createOrgWithKey(stack.orm, { rateLimitPerMinute: 100_000, burst: 10_000, mode: 'live' });
    const domain = await addSendingDomain(stack.orm, org.id);
    await setCredits(stack.orm, org.id, SENDS);
    await createDomainsService({ orm: stack.orm, encryptionKey: stack.config.encryptionKey }).addDomain({
      orgId: org.id,
      domain: INBOUND_DOMAIN,
      verified: true,
    });
    const { endpoint } = await insertSigningEndpoint(stack.orm, stack.config.encryptionKey!, org.id, receiver.url('/multi'), [
      'contact.created',
    ]);
    receiver.respond('/multi', () => ({ delayMs: 5 }));

    const kinds = ['api', 'api', 'worker', 'worker', 'smtp', 'smtp'] as const;
    processes.push(...(await Promise.all(kinds.map((kind) => spawnHeraldProcess(stack, kind)))));
    const [apiA, apiB, workerA, , smtpA, smtpB] = processes as [HeraldProcess, ...HeraldProcess[]];
    const apis = [apiA, apiB!].map((p) => apiClient(p.url!, key));
    const mxPorts = [smtpA!.port!, smtpB!.port!];

    // One kill of each kind, each when its pipeline is in the middle of its work.
    const killed: Record<string, number> = {};
    const kill = (p: HeraldProcess, label: string) => {
      if (killed[label] !== undefined) return;
      killed[label] = Date.now();
      p.service.child.kill('SIGKILL');
    };
    const accepted: string[] = [];
    const inboundIds: string[] = [];
    const attachmentOf = new Map<string, Buffer>();
    let sendRetries = 0;
    let inboundRetries = 0;
    const stalls = watchStalls({
      sends: { total: SENDS, done: () => Promise.resolve(relay.accepted.size) },
      webhooks: {
        total: EVENTS,
        done: () => Promise.resolve(new Set(receiver.requests('/multi').map((r) => r.headers['herald-delivery-id'])).size),
      },
      inbound: { total: INBOUND, done: () => scopeToOrg(stack.orm.em.fork(), org.id).count(InboxMessage, { direction: 'inbound' }) },
    });

    const sends = lanes(SENDS, 20, async (index) => {
      const headers = idem();
      const { value, tries } = await withFailover(2, index % 2, async (target) => {
        const response = await apis[target]!('POST', '/api/v1/outbox/emails', {
          body: { from: `app@${domain.domain}`, to: `user${index}@example.com`, subject: `Multi ${index}`, text: 'Hello' },
          headers,
        });
        expect([200, 202], JSON.stringify(response.body)).toContain(response.status);
        return (response.body.data as { _id: string })._id;
      });
      sendRetries += tries - 1;
      accepted.push(value);
      if (accepted.length === 300) kill(apiA, 'api');
    });
    // The events once sends are flowing, so the worker kill below finds both pipelines mid-burst
    // (webhook deliveries are quicker than sends: recorded at the start they were over first).
    const events = waitFor('the first sends at the relay', () => Promise.resolve(relay.total() >= 100 ? true : undefined), 180_000, 5).then(
      () =>
        scopeToOrg(stack.orm.em, org.id).transactional((tx) => {
          for (let i = 0; i < EVENTS; i += 1)
            recordEvent(tx, org.id, 'contact.created', { contact: { _id: `c${i}`, email: `c${i}@example.com` } });
          return Promise.resolve();
        }),
    );
    const inbound = lanes(INBOUND, 8, async (index) => {
      const attachment = randomBytes(ATTACHMENT_BYTES);
      const { value, tries } = await withFailover(2, index % 2, async (target) => {
        const transport = createTransport({ host: '127.0.0.1', port: mxPorts[target], secure: false, ignoreTLS: true });
        try {
          const info = (await transport.sendMail({
            from: 'sender@remote.example',
            to: `inbox@${INBOUND_DOMAIN}`,
            subject: `Inbound ${index}`,
            text: `message ${index}`,
            messageId: `<multi-${index}@remote.example>`,
            attachments: [{ filename: `part-${index}.bin`, content: attachment, contentType: 'application/octet-stream' }],
          })) as SentMessageInfo;
          return /queued as ([a-f0-9]{24})/.exec(info.response ?? '')![1]!;
        } finally {
          transport.close();
        }
      });
      inboundRetries += tries - 1;
      inboundIds.push(value);
      attachmentOf.set(value, attachment);
      if (inboundIds.length === 150) kill(smtpA!, 'smtp');
    });
    const workerKill = waitFor(
      'both outbound pipelines to be mid-burst',
      () => Promise.resolve(relay.total() >= 200 && receiver.requests('/multi').length >= 200 ? true : undefined),
      180_000,
      5,
    ).then(() => {
      kill(workerA!, 'worker');
      stalls.start();
    });
    await Promise.all([sends, events, inbound, workerKill]);
    expect(Object.keys(killed).sort()).toEqual(['api', 'smtp', 'worker']);
    const atWorkerKill = { relay: relay.total(), receiver: receiver.requests('/multi').length };

    const connection = stack.orm.em.getConnection();
    const settled = async (sql: string) => ((await connection.execute<{ n: number }[]>(sql, [org.id]))[0]!.n === 0 ? true : undefined);
    await waitFor(
      'every email to settle',
      () =>
        settled(`select count(*)::int as n from transactional_emails where org_id = ? and status not in ('sent', 'failed', 'cancelled')`),
      300_000,
      250,
    );
    const settledAt = Date.now();
    await waitFor(
      'every webhook delivery to finish',
      async () => {
        const em = stack.orm.em.fork();
        const open = await em.count(WebhookDelivery, { webhookId: endpoint.id, status: { $nin: ['delivered', 'exhausted'] } }, ALL_TENANTS);
        return (await em.count(WebhookDelivery, { webhookId: endpoint.id }, ALL_TENANTS)) === EVENTS && open === 0 ? true : undefined;
      },
      300_000,
      250,
    );
    await waitFor(
      'every accepted inbound message in the inbox',
      async () =>
        (await scopeToOrg(stack.orm.em, org.id).count(InboxMessage, { inboundId: { $in: inboundIds } })) === INBOUND ? true : undefined,
      300_000,
      250,
    );
    const stalled = stalls.stop();

    // Sends: one email per logical send (retries on the other api reused the Idempotency-Key).
    expect(new Set(accepted).size).toBe(SENDS);
    const emails = await connection.execute<{ status: string; message_id: string }[]>(
      `select status, message_id from transactional_emails where org_id = ?`,
      [org.id],
    );
    expect(emails).toHaveLength(SENDS);
    expect(emails.filter((e) => e.status !== 'sent')).toEqual([]);
    expect(emails.filter((e) => !relay.accepted.has(e.message_id))).toEqual([]);
    const sendCopies = [...relay.accepted.values()].reduce((sum, n) => sum + (n - 1), 0);
    expect(sendCopies).toBeLessThanOrEqual(POOL * IN_FLIGHT_PER_CONNECTION);

    // Webhooks: each delivery received; copies only of attempts the dead worker left unrecorded.
    const deliveries = await stack.orm.em.fork().find(WebhookDelivery, { webhookId: endpoint.id }, ALL_TENANTS);
    expect(deliveries.filter((d) => d.status !== 'delivered')).toEqual([]);
    const received = new Map<string, number>();
    for (const r of receiver.requests('/multi')) {
      const id = r.headers['herald-delivery-id'] as string;
      received.set(id, (received.get(id) ?? 0) + 1);
    }
    expect(deliveries.filter((d) => !received.has(d.id))).toEqual([]);
    const webhookCopies = [...received.values()].reduce((sum, n) => sum + (n - 1), 0);
    const abandoned = await stack.orm.em
      .fork()
      .count(WebhookAttempt, { deliveryId: { $in: deliveries.map((d) => d.id) }, error: ABANDONED_ERROR }, ALL_TENANTS);
    expect(webhookCopies).toBeLessThanOrEqual(abandoned);
    expect(abandoned).toBeLessThanOrEqual(stack.config.webhooks.endpointConcurrency + CLAIM_BATCH + RECORD_GROUP);

    // Inbound: every message answered 250 is in the inbox exactly once.
    expect(new Set(inboundIds).size).toBe(INBOUND);
    const inboxRows = await scopeToOrg(stack.orm.em, org.id).find(InboxMessage, { inboundId: { $in: inboundIds } });
    expect(new Set(inboxRows.map((m) => m.inboundId)).size).toBe(INBOUND);

    // Blobs: each raw message and attachment is in the bucket, and the surviving api serves each
    // attachment byte for byte (written by one smtp or worker process, read by another).
    await waitFor(
      'every inbound attachment to be stored',
      async () =>
        (await scopeToOrg(stack.orm.em.fork(), org.id).count(InboxMessage, { inboundId: { $in: inboundIds }, attachmentsReady: false })) ===
        0
          ? true
          : undefined,
      120_000,
      250,
    );
    const keys = new Set(await bucket.leftovers());
    const raws = await stack.orm.em.fork().find(InboundMessage, { id: { $in: inboundIds } }, ALL_TENANTS);
    expect(raws.filter((raw) => !keys.has(raw.blobKey)).map((raw) => raw.blobKey)).toEqual([]);
    const attachments = await scopeToOrg(stack.orm.em.fork(), org.id).find(InboxAttachment, {
      messageId: { $in: inboxRows.map((m) => m.id) },
    });
    expect(attachments.filter((a) => a.status !== 'stored' || !a.blobKey || !keys.has(a.blobKey))).toEqual([]);
    expect(attachments).toHaveLength(INBOUND);
    const inboundIdOf = new Map(inboxRows.map((m) => [m.id, m.inboundId!]));
    const served: string[] = [];
    await lanes(attachments.length, 8, async (index) => {
      const attachment = attachments[index]!;
      const response = await fetch(`${apiB!.url}/api/v1/inbox/messages/${attachment.messageId}/attachments/${attachment.id}`, {
        headers: { authorization: `Bearer ${key}` },
      });
      const body = Buffer.from(await response.arrayBuffer());
      if (response.status !== 200 || !body.equals(attachmentOf.get(inboundIdOf.get(attachment.messageId)!)!)) served.push(attachment.id);
    });
    expect(served).toEqual([]);

    console.log(
      `multi-process: killed api after 300 acceptances (${sendRetries} send(s) retried on the other api), smtp after 150 inbound ` +
        `(${inboundRetries} message(s) resent to the other MX), worker at ${atWorkerKill.relay} messages / ${atWorkerKill.receiver} webhooks; ` +
        `all ${SENDS} emails sent ${((settledAt - killed.worker!) / 1000).toFixed(1)} s after the worker kill (${sendCopies} duplicate(s) at the relay), ` +
        `all ${EVENTS} deliveries delivered (${webhookCopies} duplicate request(s), ${abandoned} abandoned), all ${INBOUND} inbound in the inbox ` +
        `with their attachments served from the S3 bucket; longest standstill after the worker kill (leases ${LEASE_SECONDS} s): ` +
        Object.entries(stalled)
          .map(([pipeline, seconds]) => `${pipeline} ${seconds.toFixed(1)} s`)
          .join(', '),
    );
  }, 900_000);
});
