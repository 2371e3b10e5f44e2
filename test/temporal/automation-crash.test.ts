import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationRun, TransactionalEmail } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { Service } from '../../src/dev/processes.ts';
import { IN_FLIGHT_PER_CONNECTION } from '../../src/modules/outbound/domain-drain.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { addActiveAutomation, addContacts, addPublishedTemplate, enrolAndWake, senderOn, statsOf } from '../support/automations.ts';
import { startCountingRelay } from '../support/counting-relay.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { spawnWorkerProcess } from '../support/worker-process.ts';

const RUNS = 300;
const POOL = 2;
const KILLS = 2;

/**
 * kill -9 of the worker process, twice, while runs go send → wait → send: every run completes,
 * and no run's step writes its email twice (one email row per run and step, by the unique key
 * and the batch's single transaction). The only repeats at the relay are emails it accepted
 * whose answer was not yet recorded when the worker died (the sending domain's at-least-once
 * window, POOL × IN_FLIGHT_PER_CONNECTION per kill), printed with the counts.
 */
describe('automation runs when the worker process is killed mid-way', () => {
  let relay: Awaited<ReturnType<typeof startCountingRelay>>;
  let stack: TestStack;
  let temporal: TemporalClientHandle;
  let worker: Service | null = null;

  beforeAll(async () => {
    relay = await startCountingRelay({ delayMs: 5 });
    stack = await createTestStack({
      SMTP_RELAY_URL: `smtp://127.0.0.1:${relay.port}`,
      SMTP_RELAY_POOL_SIZE: String(POOL),
      SMTP_RELAY_MAX_CONNECTIONS: String(POOL),
    });
    temporal = await connectTemporalClient(stack.config);
  });

  afterAll(async () => {
    await worker?.stop();
    await temporal?.close();
    await stack?.close();
    await relay?.close();
  });

  it('completes every run and writes each step’s email once', async () => {
    const { org } = await createOrgWithKey(stack.orm, { mode: 'live' });
    const domain = await addSendingDomain(stack.orm, org.id);
    await setCredits(stack.orm, org.id, 10_000);
    const first = await addPublishedTemplate(stack.orm, org.id, { subject: 'One', html: '<p>1</p>' });
    const second = await addPublishedTemplate(stack.orm, org.id, { subject: 'Two', html: '<p>2</p>' });
    const automation = await addActiveAutomation(stack.orm, org.id, {
      trigger: { type: 'contact.created' },
      start: 'one',
      steps: [
        { id: 'one', type: 'send_email', template_id: first.id, from: senderOn(domain), next: 'pause' },
        { id: 'pause', type: 'wait', duration: '3s', next: 'two' },
        { id: 'two', type: 'send_email', template_id: second.id, from: senderOn(domain) },
      ],
    });
    const tag = unique('crash');
    const contacts = await addContacts(
      stack.orm,
      org.id,
      Array.from({ length: RUNS }, (_, i) => `c${i}-${tag}@example.com`),
    );
    worker = await spawnWorkerProcess(stack);
    await enrolAndWake(stack.orm, temporal.client, stack.config, {
      orgId: org.id,
      type: 'contact.created',
      key: null,
      contactIds: contacts.map((c) => c.id),
    });

    // Kill the worker at a quarter and at two thirds of the messages.
    const killed: number[] = [];
    for (const share of [0.25, 0.66].slice(0, KILLS)) {
      const deadline = Date.now() + 60_000;
      while (relay.total() < RUNS * 2 * share && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      worker.child.kill('SIGKILL');
      await worker.exited;
      killed.push(relay.total());
      worker = await spawnWorkerProcess(stack);
    }

    const em = () => scopeToOrg(stack.orm.em.fork(), org.id);
    const end = Date.now() + 120_000;
    let open = RUNS;
    while (Date.now() < end) {
      open = await em().count(AutomationRun, { automationId: automation.id, status: { $ne: 'completed' } });
      const emails = await em().find(TransactionalEmail, { automationRunId: { $ne: null } }, { fields: ['status'] });
      if (open === 0 && emails.length === RUNS * 2 && emails.every((e) => e.status === 'sent')) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(open).toBe(0);
    const emails = await em().find(TransactionalEmail, { automationRunId: { $ne: null } });
    // One email per run and step: RUNS × 2 rows, each (run, step) once.
    expect(emails).toHaveLength(RUNS * 2);
    expect(new Set(emails.map((e) => `${e.automationRunId}/${e.automationStepId}`)).size).toBe(RUNS * 2);
    const counts = emails.map((e) => relay.accepted.get(e.messageId) ?? 0);
    expect(counts.filter((n) => n === 0)).toHaveLength(0);
    const repeats = counts.reduce((sum, n) => sum + (n - 1), 0);
    expect(repeats).toBeLessThanOrEqual(KILLS * POOL * IN_FLIGHT_PER_CONNECTION);
    expect(await statsOf(stack.orm, org.id, automation.id)).toEqual({
      totalRuns: RUNS,
      activeRuns: 0,
      completedRuns: RUNS,
      failedRuns: 0,
      emailsSent: RUNS * 2,
      creditsUsed: RUNS * 2,
    });
    process.stdout.write(
      `automation crash: ${RUNS} runs × 2 sends, killed at ${killed.join(' and ')} accepted, ${repeats} relay repeats (window ${KILLS * POOL * IN_FLIGHT_PER_CONNECTION}), 0 step repeats\n`,
    );
  }, 240_000);
});
