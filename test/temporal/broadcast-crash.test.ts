import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, Segment, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { Service } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { IN_FLIGHT_PER_CONNECTION } from '../../src/modules/outbound/domain-drain.ts';
import { idem } from '../support/api.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { addSendingDomain } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';

const CONTACTS = 400;
const POOL = 2;

/**
 * kill -9 of the worker process in the middle of a broadcast: the next worker resumes from the
 * queue; every eligible contact gets its message, and the only repeats are messages the relay
 * accepted whose answer was not yet recorded (at most the emails in flight at the kill:
 * POOL × IN_FLIGHT_PER_CONNECTION). The repeats are counted and printed.
 */
describe('a broadcast when the worker process is killed mid-send', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let stack: TestStack;
  let api: RunningApi;
  let worker: Service | null = null;

  beforeAll(async () => {
    relay = await startCountingRelay({ delayMs: 15 });
    stack = await createTestStack({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_POOL_SIZE: String(POOL),
      SMTP_RELAY_MAX_CONNECTIONS: String(POOL),
    });
    api = await startApi(stack.config, createLogger('silent'));
  });

  afterAll(async () => {
    await worker?.stop();
    await api?.close();
    await stack?.close();
    await relay?.close();
  });

  it('sends every eligible contact its message; repeats only within the in-flight window', async () => {
    const { org, key } = await createOrgWithKey(stack.orm, { mode: 'live' });
    const domain = await addSendingDomain(stack.orm, org.id);
    const em = scopeToOrg(stack.orm.em.fork(), org.id);
    const tag = unique('crash');
    for (let i = 0; i < CONTACTS; i += 1)
      em.create(Contact, { orgId: org.id, email: `r${i}-${tag}@example.com`, tags: [tag], firstName: `R${i}` });
    const segment = em.create(Segment, { orgId: org.id, name: 'crash', type: 'tag', tags: [tag] });
    await em.flush();
    const request = apiClient(api.url, key);
    worker = await spawnWorkerProcess(stack);

    const draft = await request('POST', '/api/v1/outbox/broadcasts', {
      headers: idem(),
      body: {
        name: 'Crash',
        subject: 'Hi {{first_name}}',
        from_name: 'Shop',
        from_email: `news@${domain.domain}`,
        segment_ids: [segment.id],
        plain_text: 'Hello {{first_name}}',
      },
    });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    const id = (draft.body.data as { _id: string })._id;
    expect((await request('POST', `/api/v1/outbox/broadcasts/${id}/send`, { headers: idem(), body: {} })).status).toBe(202);

    // Kill the worker once a quarter of the messages are through.
    const deadline = Date.now() + 60_000;
    while (relay.total() < CONTACTS / 4 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    worker.child.kill('SIGKILL');
    await worker.exited;
    const atKill = relay.total();
    expect(atKill).toBeLessThan(CONTACTS);

    worker = await spawnWorkerProcess(stack);
    const end = Date.now() + 90_000;
    let status = '';
    while (Date.now() < end) {
      status = ((await request('GET', `/api/v1/outbox/broadcasts/${id}`)).body.data as { status: string }).status;
      if (status === 'sent') break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(status).toBe('sent');

    const messages = await em.find(TransactionalEmail, { broadcastId: id });
    expect(messages).toHaveLength(CONTACTS);
    expect(messages.every((m) => m.status === 'sent')).toBe(true);
    const counts = messages.map((m) => relay.accepted.get(m.messageId) ?? 0);
    expect(counts.filter((n) => n === 0)).toHaveLength(0);
    const repeats = counts.reduce((sum, n) => sum + (n - 1), 0);
    expect(repeats).toBeLessThanOrEqual(POOL * IN_FLIGHT_PER_CONNECTION);
    process.stdout.write(
      `broadcast crash: ${CONTACTS} contacts, killed at ${atKill} accepted, ${repeats} repeated (window ${POOL * IN_FLIGHT_PER_CONNECTION})\n`,
    );
  }, 180_000);
});
