import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationRun, AutomationRunStep, Segment } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { idem, startApiHarness, type ApiHarness } from '../support/api.ts';
import { addActiveAutomation, addContacts, enrolAndWake, statsOf } from '../support/automations.ts';
import { unique } from '../support/factories.ts';
import type { ApiResponse } from '../support/http.ts';

function expectStatus(response: ApiResponse, status: number): void {
  expect(response.status, JSON.stringify(response.body)).toBe(status);
}

/**
 * Goals end waiting runs as soon as the contact meets them: a change through the API (a tag
 * added, a static segment joined, a custom event) makes the contact's runs waiting under a goal
 * it may meet due now, and the automation's actor ends them `completed` with exit reason `goal`,
 * long before their one-day wait would have.
 */
describe('automation goals (API change → waiting run ends at once)', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let orgId: string;

  const em = () => scopeToOrg(h.stack.orm.em.fork(), orgId);
  const runOf = (automationId: string, contactId: string) => em().findOneOrFail(AutomationRun, { automationId, contactId });

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  /** An active automation with `goal` whose runs wait a day, and a contact's run of it waiting. */
  async function waitingRun(goal: Record<string, string>) {
    const name = unique('start');
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'event', name },
      goal,
      start: 'day',
      steps: [{ id: 'day', type: 'wait', duration: '1d' }],
    });
    const [contact] = await addContacts(h.stack.orm, orgId, [`${unique('goal')}@example.com`]);
    await enrolAndWake(h.stack.orm, temporal.client, h.stack.config, { orgId, type: 'event', key: name, contactIds: [contact!.id] });
    const run = await until(
      'the run to wait a day',
      () => runOf(automation.id, contact!.id),
      (r) => r.stepId === 'day' && !!r.dueAt && r.dueAt.getTime() > Date.now() + 3_600_000,
    );
    return { automation, contact: contact!, run };
  }

  const endedByGoal = (automationId: string, contactId: string) =>
    until(
      'the goal to end the run',
      () => runOf(automationId, contactId),
      (r) => r.status === 'completed',
    );

  beforeAll(async () => {
    h = await startApiHarness();
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    temporal = await connectTemporalClient(h.stack.config);
    orgId = h.workspace.org.id;
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await h?.close();
  });

  it('ends a run waiting a day within seconds of the contact getting the goal tag (PATCH), and only that run', async () => {
    const tag = unique('customer');
    const met = await waitingRun({ has_tag: tag });
    const other = await waitingRun({ has_tag: tag });
    expectStatus(await h.request('PATCH', `/api/v1/contacts/${met.contact.id}`, { headers: idem(), body: { tags: [tag] } }), 200);
    expectStatus(await h.request('PATCH', `/api/v1/contacts/${other.contact.id}`, { headers: idem(), body: { tags: ['unrelated'] } }), 200);

    const ended = await endedByGoal(met.automation.id, met.contact.id);
    expect(ended).toMatchObject({ status: 'completed', exitReason: 'goal', stepId: 'day', dueAt: null });
    const timeline = await em().find(AutomationRunStep, { runId: ended.id }, { orderBy: { id: 'asc' } });
    expect(timeline.map((s) => `${s.stepId}:${s.outcome}`)).toEqual(['day:waiting', 'day:completed']);
    expect(await statsOf(h.stack.orm, orgId, met.automation.id)).toMatchObject({ activeRuns: 0, completedRuns: 1 });
    // A tag no goal names leaves the other run's wait alone.
    const untouched = await runOf(other.automation.id, other.contact.id);
    expect(untouched).toMatchObject({ status: 'active' });
    expect(untouched.dueAt?.getTime()).toBe(other.run.dueAt?.getTime());
  });

  it('ends a run when the contact joins the goal segment (static membership) or a tag segment through a tag', async () => {
    const segments = em();
    const members = segments.create(Segment, { orgId, name: unique('members'), type: 'static' });
    const buyers = segments.create(Segment, { orgId, name: unique('buyers'), type: 'tag', tags: [unique('bought')] });
    await segments.flush();
    const joined = await waitingRun({ in_segment: members.id });
    const tagged = await waitingRun({ in_segment: buyers.id });
    expectStatus(
      await h.request('POST', `/api/v1/segments/${members.id}/contacts`, { headers: idem(), body: { contact_ids: [joined.contact.id] } }),
      200,
    );
    expectStatus(await h.request('PATCH', `/api/v1/contacts/${tagged.contact.id}`, { headers: idem(), body: { tags: buyers.tags } }), 200);
    expect(await endedByGoal(joined.automation.id, joined.contact.id)).toMatchObject({ exitReason: 'goal' });
    expect(await endedByGoal(tagged.automation.id, tagged.contact.id)).toMatchObject({ exitReason: 'goal' });
  });

  it('ends a run when the contact sends the goal event (POST /api/v1/events)', async () => {
    const name = unique('subscription.started');
    const waiting = await waitingRun({ had_event: name });
    const response = await h.request('POST', '/api/v1/events', { headers: idem(), body: { event: name, contact_id: waiting.contact.id } });
    expectStatus(response, 202);
    expect(await endedByGoal(waiting.automation.id, waiting.contact.id)).toMatchObject({ exitReason: 'goal' });
  });
});
