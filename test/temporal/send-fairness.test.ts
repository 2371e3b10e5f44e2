import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../../src/dev/processes.ts';
import { createLogger } from '../../src/logger.ts';
import { startApi, type RunningApi } from '../../src/main-api.ts';
import { sendDomainActorContract } from '../../workflows/send-domain.ts';
import { wakeActors } from '../../src/temporal/actor-wake.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem } from '../support/api.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { createOrgWithKey } from '../support/factories.ts';
import { apiClient } from '../support/http.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

const BURST = 10_000;

/**
 * Fairness of the sending-domain actors: a backlog of 10,000 emails on one domain drains at its
 * own pace while an email of another domain, accepted in the middle of it, goes out at once.
 */
describe('a burst of 10,000 sends on one domain', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let stack: TestStack;
  let api: RunningApi;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;

  beforeAll(async () => {
    installTemporalLogging(createLogger('silent'));
    relay = await startCountingRelay({ delayMs: 2 });
    stack = await createTestStack({ SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}` });
    api = await startApi(stack.config, createLogger('silent'));
    temporal = await connectTemporalClient(stack.config);
    worker = await startWorker(stack.config, createLogger('silent'));
  });

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await api?.close();
    await stack?.close();
    await relay?.close();
  });

  it("does not hold back another domain's send", async () => {
    const { org, key } = await createOrgWithKey(stack.orm, { mode: 'live' });
    await setCredits(stack.orm, org.id, 10);
    const busy = await addSendingDomain(stack.orm, org.id);
    const quiet = await addSendingDomain(stack.orm, org.id);

    // The backlog: 10,000 accepted emails of the busy domain, due now (written as acceptance writes them).
    await stack.orm.em.getConnection().execute(
      `with rows as (
         select substr(md5(random()::text || g::text), 1, 24) as id, g from generate_series(1, ?) g
       ), emails as (
         insert into transactional_emails (id, org_id, domain_id, domain, from_email, subject, text, message_id, status, quota_day, next_attempt_at, created_at, updated_at)
         select id, ?, ?, ?, ?, 'Burst ' || g, 'Hello', id || '.0@' || ?, 'queued', to_char(now(), 'YYYY-MM-DD'), now(), now(), now() from rows
         returning id
       )
       insert into email_recipients (id, org_id, email_id, kind, email, status, attempts, created_at, updated_at)
       select substr(md5(id || 'r'), 1, 24), ?, id, 'to', 'burst-' || id || '@example.com', 'queued', 0, now(), now() from emails`,
      [BURST, org.id, busy.id, busy.domain, `app@${busy.domain}`, busy.domain, org.id],
    );
    await wakeActors(temporal.client, stack.config, sendDomainActorContract, [{ orgId: org.id, domainId: busy.id }]);
    await waitFor('the burst to be under way', () => Promise.resolve(relay.total() >= 200 ? true : undefined), 60_000, 10);

    const response = await apiClient(api.url, key)('POST', '/api/v1/outbox/emails', {
      body: { from: `app@${quiet.domain}`, to: 'someone@example.com', subject: 'Meanwhile', text: 'Hello' },
      headers: idem(),
    });
    expect(response.status, JSON.stringify(response.body)).toBe(202);
    const acceptedAt = Date.now();
    const messageId = (response.body.data as { message_id: string }).message_id;
    await waitFor(
      "the other domain's email at the relay",
      () => Promise.resolve(relay.accepted.has(messageId) ? true : undefined),
      30_000,
      10,
    );
    const waited = relay.firstAt.get(messageId)! - acceptedAt;
    const [left] = await stack.orm.em
      .getConnection()
      .execute<{ open: number }[]>(
        `select count(*)::int as open from transactional_emails where domain_id = ? and status in ('queued', 'sending')`,
        [busy.id],
      );
    console.log(
      `send fairness: the other domain's email reached the relay ${waited} ms after its 202, with ${left!.open} of the burst's ${BURST} still open`,
    );
    // It went out beside the burst, not behind it.
    expect(left!.open).toBeGreaterThan(BURST / 2);
    expect(waited).toBeLessThan(5_000);
  }, 180_000);
});
