import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationRun, AutomationRunStep, TransactionalEmail, type Domain } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { utcDay } from '../../src/modules/sends/sends.fns.ts';
import { SIMULATOR_DOMAIN, startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { addActiveAutomation, addContacts, addPublishedTemplate, enrolAndWake, senderOn, statsOf } from '../support/automations.ts';
import { unique } from '../support/factories.ts';
import { addSendingDomain, creditsOf, setCredits } from '../support/sending.ts';

/**
 * What an automation's emails cost in the end: an email the relay refuses outright (nothing
 * handed off) gives its credit back, to the balance or to overage as it was taken, and the
 * automation's `creditsUsed` goes down with it; and every email counts against its domain's
 * warm-up cap, a send with no room left waiting for the next UTC day.
 */
describe('automation credits and refunds (run → domain queue → relay refuses → refund)', () => {
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let orgId: string;
  let domain: Domain;

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 45_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  beforeAll(async () => {
    sink = await startMailSink({ smtpPort: 0, feedback: null });
    h = await startApiHarness(
      { SMTP_RELAY_URL: `smtp://127.0.0.1:${sink.smtpPort}`, SMTP_RELAY_FINAL_HOP: 'true', BOUNCE_DOMAIN: 'bounces.herald.test' },
      { keyMode: 'live' },
    );
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    temporal = await connectTemporalClient(h.stack.config);
    orgId = h.workspace.org.id;
    domain = await addSendingDomain(h.stack.orm, orgId);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await h?.close();
    await sink?.close();
  });

  it('takes refunded credits off creditsUsed and gives balance and overage back where they came from', async () => {
    // One credit on the balance; the second email is overage.
    await setCredits(h.stack.orm, orgId, 1, true);
    const template = await addPublishedTemplate(h.stack.orm, orgId, { subject: 'Hello', html: '<p>Hello</p>' });
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'contact.created' },
      start: 'hello',
      steps: [
        { id: 'hello', type: 'send_email', template_id: template.id, from: senderOn(domain), next: 'later' },
        { id: 'later', type: 'wait', duration: '1d' },
      ],
    });
    const tag = unique('r');
    const contacts = await addContacts(h.stack.orm, orgId, [`reject+${tag}a@${SIMULATOR_DOMAIN}`, `reject+${tag}b@${SIMULATOR_DOMAIN}`]);
    await enrolAndWake(h.stack.orm, temporal.client, h.stack.config, {
      orgId,
      type: 'contact.created',
      key: null,
      contactIds: contacts.map((c) => c.id),
    });
    const em = () => scopeToOrg(h.stack.orm.em.fork(), orgId);
    const runs = await until(
      'both runs to send and wait',
      () => em().find(AutomationRun, { automationId: automation.id }),
      (all) => all.length === 2 && all.every((r) => r.stepId === 'later'),
    );
    const emails = await em().find(TransactionalEmail, { automationRunId: { $in: runs.map((r) => r.id) } });
    expect(emails.map((e) => [e.creditsCharged, e.overageCharged]).sort()).toEqual([
      [0, 1],
      [1, 0],
    ]);
    expect(await statsOf(h.stack.orm, orgId, automation.id)).toMatchObject({ emailsSent: 2, creditsUsed: 2 });

    await until(
      'the relay to refuse both emails',
      () => em().find(TransactionalEmail, { id: { $in: emails.map((e) => e.id) } }),
      (all) => all.every((e) => e.quotaReleased),
    );
    expect(await statsOf(h.stack.orm, orgId, automation.id)).toMatchObject({ emailsSent: 2, creditsUsed: 0 });
    expect(await creditsOf(h.stack.orm, orgId)).toEqual({ balance: 1, overageUsed: 0 });
  });

  it("counts automation emails against the domain's warm-up cap and holds a send the cap has no room for until the next UTC day", async () => {
    await setCredits(h.stack.orm, orgId, 100);
    const capped = await addSendingDomain(h.stack.orm, orgId, { dailyCap: 1 });
    const template = await addPublishedTemplate(h.stack.orm, orgId, { subject: 'Hi', html: '<p>Hi</p>' });
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'contact.created' },
      start: 'hello',
      steps: [
        { id: 'hello', type: 'send_email', template_id: template.id, from: senderOn(capped), next: 'later' },
        { id: 'later', type: 'wait', duration: '1d' },
      ],
    });
    const tag = unique('cap');
    const contacts = await addContacts(h.stack.orm, orgId, [`one-${tag}@example.com`, `two-${tag}@example.com`]);
    await enrolAndWake(h.stack.orm, temporal.client, h.stack.config, {
      orgId,
      type: 'contact.created',
      key: null,
      contactIds: contacts.map((c) => c.id),
    });
    const em = () => scopeToOrg(h.stack.orm.em.fork(), orgId);
    const runs = await until(
      'one run to send and the other to be held',
      () => em().find(AutomationRun, { automationId: automation.id }, { orderBy: { stepId: 'asc' } }),
      (all) => all.length === 2 && all[0]?.stepId === 'hello' && all[1]?.stepId === 'later',
    );
    const tomorrow = new Date(`${utcDay(new Date(Date.now() + 86_400_000))}T00:00:00.000Z`);
    // (A run held just before midnight is due at the midnight that follows.)
    expect([tomorrow.getTime(), tomorrow.getTime() - 86_400_000]).toContain(runs[0]!.dueAt!.getTime());
    const held = await em().find(AutomationRunStep, { runId: runs[0]!.id }, { orderBy: { id: 'asc' } });
    expect(held.map((s) => `${s.stepId}:${s.outcome}`)).toEqual(['hello:deferred']);
    expect(await em().count(TransactionalEmail, { automationRunId: { $in: runs.map((r) => r.id) } })).toBe(1);
    const [counter] = await h.stack.orm.em
      .fork()
      .execute<{ count: number }[]>(
        `select coalesce(sum(count), 0)::int as count from domain_daily_sends where domain_id = ? and day = ?`,
        [capped.id, utcDay(new Date())],
      );
    expect(counter?.count).toBe(1);
    expect(await statsOf(h.stack.orm, orgId, automation.id)).toMatchObject({ emailsSent: 1, activeRuns: 2 });
  });
});
