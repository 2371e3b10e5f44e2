import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createTransport, type SentMessageInfo } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { InboxMessage, WebhookAttempt, WebhookDelivery } from '../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { waitFor } from '../../src/dev/processes.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { recordEvent } from '../../src/modules/events/events.fns.ts';
import { IN_FLIGHT_PER_CONNECTION } from '../../src/modules/outbound/domain-drain.ts';
import { ABANDONED_ERROR } from '../../src/modules/webhooks/delivery-engine.ts';
import { RECORD_GROUP } from '../../src/modules/webhooks/endpoint-drain.ts';
import { idem } from '../support/api.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { spawnHeraldProcess, type HeraldProcess } from '../support/herald-process.ts';
import { apiClient } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { insertSigningEndpoint } from '../support/webhook-rows.ts';
import { startWebhookReceiver, type WebhookReceiver } from '../support/webhook-receiver.ts';

/**
 * Herald past one process of each kind (ARCHITECTURE: every process is stateless, actors hold
 * leases): two api, two worker and two smtp processes on one PostgreSQL, Redis, Temporal and
 * blob store. During 1,000 sends, 1,000 webhook deliveries and 500 inbound messages, one process
 * of each kind is killed with SIGKILL. Clients do what real ones do with a dead server: the send
 * is retried on the other api with the same Idempotency-Key, the message on the other MX.
 * Afterwards every accepted item reached its end on the survivors, none twice beyond the window
 * that was in flight in the killed worker.
 */

const SENDS = 1_000;
const EVENTS = 1_000;
const INBOUND = 500;
const POOL = 5;
const INBOUND_DOMAIN = 'mx.multi.example';

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

describe('two api, two worker and two smtp processes; one of each killed mid-flight', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let receiver: WebhookReceiver;
  let stack: TestStack;
  let blobDir: string;
  const processes: HeraldProcess[] = [];

  beforeAll(async () => {
    relay = await startCountingRelay({ delayMs: 5 });
    receiver = await startWebhookReceiver();
    blobDir = await mkdtemp(join(tmpdir(), 'herald-multi-'));
    stack = await createTestStack({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_POOL_SIZE: String(POOL),
      SMTP_RELAY_MAX_CONNECTIONS: String(POOL),
      WEBHOOK_RETRY_SCHEDULE: '0s,1s,1s,1s,1s',
      BLOB_DIR: blobDir,
    });
  }, 60_000);

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.service.stop()));
    await stack?.close();
    await receiver?.close();
    await relay?.close();
    if (blobDir) await rm(blobDir, { recursive: true, force: true });
  });

  it('loses nothing and repeats only what was in flight in the killed worker', async () => {
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
    let sendRetries = 0;
    let inboundRetries = 0;

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
    await scopeToOrg(stack.orm.em, org.id).transactional((tx) => {
      for (let i = 0; i < EVENTS; i += 1)
        recordEvent(tx, org.id, 'contact.created', { contact: { _id: `c${i}`, email: `c${i}@example.com` } });
      return Promise.resolve();
    });
    const inbound = lanes(INBOUND, 8, async (index) => {
      const { value, tries } = await withFailover(2, index % 2, async (target) => {
        const transport = createTransport({ host: '127.0.0.1', port: mxPorts[target], secure: false, ignoreTLS: true });
        try {
          const info = (await transport.sendMail({
            from: 'sender@remote.example',
            to: `inbox@${INBOUND_DOMAIN}`,
            subject: `Inbound ${index}`,
            text: `message ${index}`,
            messageId: `<multi-${index}@remote.example>`,
          })) as SentMessageInfo;
          return /queued as ([a-f0-9]{24})/.exec(info.response ?? '')![1]!;
        } finally {
          transport.close();
        }
      });
      inboundRetries += tries - 1;
      inboundIds.push(value);
      if (inboundIds.length === 150) kill(smtpA!, 'smtp');
    });
    const workerKill = waitFor(
      'both outbound pipelines to be mid-burst',
      () => Promise.resolve(relay.total() >= 200 && receiver.requests('/multi').length >= 200 ? true : undefined),
      180_000,
      5,
    ).then(() => kill(workerA!, 'worker'));
    await Promise.all([sends, inbound, workerKill]);
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
    expect(abandoned).toBeLessThanOrEqual(stack.config.webhooks.endpointConcurrency + RECORD_GROUP);

    // Inbound: every message answered 250 is in the inbox exactly once.
    expect(new Set(inboundIds).size).toBe(INBOUND);
    const inboxRows = await scopeToOrg(stack.orm.em, org.id).find(InboxMessage, { inboundId: { $in: inboundIds } });
    expect(new Set(inboxRows.map((m) => m.inboundId)).size).toBe(INBOUND);

    console.log(
      `multi-process: killed api after 300 acceptances (${sendRetries} send(s) retried on the other api), smtp after 150 inbound ` +
        `(${inboundRetries} message(s) resent to the other MX), worker at ${atWorkerKill.relay} messages / ${atWorkerKill.receiver} webhooks; ` +
        `all ${SENDS} emails sent ${((settledAt - killed.worker!) / 1000).toFixed(1)} s after the worker kill (${sendCopies} duplicate(s) at the relay), ` +
        `all ${EVENTS} deliveries delivered (${webhookCopies} duplicate request(s), ${abandoned} abandoned), all ${INBOUND} inbound in the inbox`,
    );
  }, 900_000);
});
