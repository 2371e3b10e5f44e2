import * as v from 'valibot';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Automation,
  AutomationRun,
  AutomationRunStep,
  Contact,
  EmailEvent,
  Event,
  Segment,
  SegmentMember,
  Template,
  TransactionalEmail,
  type Domain,
} from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { startMailSink, type MailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { signalRuns } from '../../src/modules/automations/automation-runs.repo.ts';
import { EVENT_CATALOG } from '../../src/modules/events/events.schemas.ts';
import { wakeActors } from '../../src/temporal/actor-wake.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { automationActorContract } from '../../workflows/automation.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { addActiveAutomation, addContacts, addPublishedTemplate, enrolAndWake, senderOn, statsOf } from '../support/automations.ts';
import { unique } from '../support/factories.ts';
import { insertEndpoint } from '../support/webhook-rows.ts';
import { addSendingDomain, setCredits } from '../support/sending.ts';

/**
 * Automations end to end with a real worker: runs enrolled as a trigger does, advanced by the
 * automation actor (`automation:<id>`), their emails delivered through the sending domain's
 * actor to a mail sink on 127.0.0.1.
 */
describe('automation runs (enrol → actor → steps → domain queue → relay)', () => {
  let sink: MailSink;
  let h: ApiHarness;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  let orgId: string;
  let domain: Domain;

  const em = () => scopeToOrg(h.stack.orm.em.fork(), orgId);
  const runsOf = (automationId: string) => em().find(AutomationRun, { automationId }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  const timelineOf = async (runId: string) =>
    (await em().find(AutomationRunStep, { runId }, { orderBy: { id: 'asc' } })).map((s) => `${s.stepId}:${s.outcome}`);
  const sentTo = (email: string) => sink.messages().filter((m) => m.rcptTo.includes(email));

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  const enrol = (
    automationId: string,
    contactIds: string[],
    type: 'contact.created' | 'event' = 'contact.created',
    key: string | null = null,
  ) =>
    enrolAndWake(h.stack.orm, temporal.client, h.stack.config, { orgId, type, key, contactIds }).then((touched) => {
      expect(touched.map((t) => t.automationId)).toContain(automationId);
    });

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
    await setCredits(h.stack.orm, orgId, 10_000);
  }, 120_000);

  afterAll(async () => {
    await worker?.shutdown();
    await temporal?.close();
    await h?.close();
    await sink?.close();
  });

  it('runs a welcome series: sends, waits, branches on whether the welcome was opened, and counts exactly', async () => {
    const welcome = await addPublishedTemplate(h.stack.orm, orgId, {
      subject: 'Welcome, {{first_name}}',
      html: '<p>Hi {{first_name}}</p>',
    });
    const reminder = await addPublishedTemplate(h.stack.orm, orgId, { subject: 'Did you see this?', html: '<p>Reminder</p>' });
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'contact.created' },
      start: 'welcome',
      steps: [
        { id: 'welcome', type: 'send_email', template_id: welcome.id, from: senderOn(domain), next: 'pause' },
        { id: 'pause', type: 'wait', duration: '2s', next: 'opened' },
        { id: 'opened', type: 'condition', if: { email: 'opened', step: 'welcome' }, yes: 'done', no: 'remind' },
        { id: 'remind', type: 'send_email', template_id: reminder.id, from: senderOn(domain) },
        { id: 'done', type: 'exit', reason: 'engaged' },
      ],
    });
    const tag = unique('w');
    const [reader, ignorer] = await addContacts(h.stack.orm, orgId, [`reader-${tag}@example.com`, `ignorer-${tag}@example.com`], {
      firstName: 'Pat',
    });
    // Run endings are written as events for the types an endpoint subscribes to (here only .completed).
    await insertEndpoint(h.stack.orm, orgId, { events: ['automation.run.completed'], url: 'http://127.0.0.1:9/automation-events' });
    await enrol(automation.id, [reader!.id, ignorer!.id]);

    // Both welcomes go out at once; the reader opens theirs before the wait ends.
    const waiting = await until(
      'both runs to wait',
      () => runsOf(automation.id),
      (runs) => runs.length === 2 && runs.every((r) => r.stepId === 'pause' && r.dueAt !== null),
    );
    const readerRun = waiting.find((r) => r.contactId === reader!.id)!;
    const welcomeId = (readerRun.context as { emails: Record<string, string> }).emails.welcome!;
    const welcomeEmail = await em().findOneOrFail(TransactionalEmail, { id: welcomeId });
    expect(welcomeEmail).toMatchObject({
      subject: 'Welcome, Pat',
      automationRunId: readerRun.id,
      automationStepId: 'welcome',
      contactId: reader!.id,
    });
    const scoped = em();
    scoped.create(EmailEvent, {
      orgId,
      type: 'opened',
      emailId: welcomeId,
      recipient: reader!.email,
      domain: domain.domain,
      occurredAt: new Date(),
    } as never);
    await scoped.flush();

    const ended = await until(
      'both runs to end',
      () => runsOf(automation.id),
      (runs) => runs.every((r) => r.status !== 'active'),
    );
    expect(ended.find((r) => r.contactId === reader!.id)).toMatchObject({ status: 'completed', exitReason: 'engaged' });
    expect(ended.find((r) => r.contactId === ignorer!.id)).toMatchObject({ status: 'completed', exitReason: null });
    expect(await timelineOf(readerRun.id)).toEqual(['welcome:sent', 'pause:waiting', 'pause:waited', 'opened:branched', 'done:completed']);
    // Each ended run is an automation.run.completed event, in the catalog's shape.
    const completed = await em().find(Event, { type: 'automation.run.completed' });
    const readerEvent = completed.find((e) => (e.data as { run: { _id: string } }).run._id === readerRun.id);
    const schema = EVENT_CATALOG.find((d) => d.type === 'automation.run.completed')!.data;
    expect(v.parse(schema, readerEvent?.data)).toMatchObject({
      run: { status: 'completed', exit_reason: 'engaged', definition_version: 1 },
      automation: { _id: automation.id, name: automation.name },
    });
    await until(
      'the emails at the relay',
      () => Promise.resolve(sink.messages().length),
      () => sentTo(ignorer!.email).length === 2,
    );
    expect(sentTo(reader!.email)).toHaveLength(1);

    // Each message carries a signed one-click unsubscribe (RFC 8058), which works like a broadcast's.
    const reminderRaw = sentTo(ignorer!.email)
      .find((m) => m.raw.toString().includes('Did you see this?'))!
      .raw.toString();
    const link = /^List-Unsubscribe:\s*<([^>]+)>/im.exec(reminderRaw)?.[1] ?? '';
    expect(link.startsWith(`${h.stack.config.http.publicUrl}/unsubscribe/`), reminderRaw.slice(0, 2000)).toBe(true);
    expect(reminderRaw).toMatch(/^List-Unsubscribe-Post: List-Unsubscribe=One-Click/im);
    const oneClick = await fetch(`${h.api.url}${new URL(link).pathname}`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'List-Unsubscribe=One-Click',
    });
    expect(oneClick.status).toBe(200);
    expect((await em().findOneOrFail(Contact, { id: ignorer!.id }, { refresh: true })).status).toBe('unsubscribed');
    expect(await statsOf(h.stack.orm, orgId, automation.id)).toEqual({
      totalRuns: 2,
      activeRuns: 0,
      completedRuns: 2,
      failedRuns: 0,
      emailsSent: 3,
      creditsUsed: 3,
    });
  });

  it('holds the runs of a paused automation at their next step and continues them when it is active again', async () => {
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'event', name: 'signed_up' },
      start: 'tag',
      steps: [
        { id: 'tag', type: 'update_contact', add_tags: ['onboarding'], set_fields: { stage: 'new' }, next: 'wait' },
        { id: 'wait', type: 'wait', duration: '1s', next: 'untag' },
        { id: 'untag', type: 'update_contact', remove_tags: ['onboarding'] },
      ],
    });
    // A step that tags the contact triggers another automation, as the same change through the API would.
    const follower = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'tag.added', tag: 'onboarding' },
      start: 'done',
      steps: [{ id: 'done', type: 'exit' }],
    });
    const [contact] = await addContacts(h.stack.orm, orgId, [`paused-${unique('p')}@example.com`], { tags: ['vip'] });
    await enrol(automation.id, [contact!.id], 'event', 'signed_up');
    await until(
      'the run to wait',
      () => runsOf(automation.id),
      (runs) => runs[0]?.stepId === 'wait',
    );
    expect((await em().findOneOrFail(Contact, { id: contact!.id })).tags.sort()).toEqual(['onboarding', 'vip']);
    await until(
      'the tag to start the other automation',
      () => runsOf(follower.id),
      (runs) => runs[0]?.status === 'completed',
    );

    await em().nativeUpdate(Automation, { id: automation.id }, { status: 'paused' });
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    const [held] = await runsOf(automation.id);
    expect(held).toMatchObject({ status: 'active', stepId: 'wait' });

    await em().nativeUpdate(Automation, { id: automation.id }, { status: 'active' });
    await wakeActors(temporal.client, h.stack.config, automationActorContract, [{ orgId, automationId: automation.id }]);
    await until(
      'the run to complete',
      () => runsOf(automation.id),
      (runs) => runs[0]?.status === 'completed',
    );
    const after = await em().findOneOrFail(Contact, { id: contact!.id }, { refresh: true });
    expect(after.tags).toEqual(['vip']);
    expect(after.customFields).toMatchObject({ stage: 'new' });
  });

  it('takes the event branch when the event comes within the time-out, the time-out branch otherwise; a goal ends a run early', async () => {
    const segments = em();
    const members = segments.create(Segment, { orgId, name: unique('customers'), type: 'static' });
    await segments.flush();
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'contact.created' },
      goal: { has_tag: 'customer' },
      start: 'listen',
      steps: [
        {
          id: 'listen',
          type: 'wait_for_event',
          event: 'event',
          name: 'trial_started',
          timeout: '2s',
          next: 'joined',
          timeout_next: 'nudge',
        },
        { id: 'joined', type: 'add_to_segment', segment_id: members.id },
        { id: 'nudge', type: 'update_contact', add_tags: ['nudged'], next: 'later' },
        { id: 'later', type: 'wait', duration: '1h' },
      ],
    });
    const tag = unique('e');
    const [quick, slow, buyer] = await addContacts(h.stack.orm, orgId, [
      `quick-${tag}@example.com`,
      `slow-${tag}@example.com`,
      `buyer-${tag}@example.com`,
    ]);
    await enrol(automation.id, [quick!.id, slow!.id, buyer!.id]);
    await until(
      'the runs to listen',
      () => runsOf(automation.id),
      (runs) => runs.length === 3 && runs.every((r) => r.waitingFor === 'event:trial_started'),
    );
    const touched = await em().transactional((tx) => signalRuns(tx, { orgId, contactId: quick!.id, key: 'event:trial_started' }));
    await wakeActors(temporal.client, h.stack.config, automationActorContract, touched);

    const runs = await until(
      'one run to join and one to time out',
      () => runsOf(automation.id),
      (all) =>
        all.find((r) => r.contactId === quick!.id)?.status === 'completed' && all.find((r) => r.contactId === slow!.id)?.stepId === 'later',
    );
    expect(await timelineOf(runs.find((r) => r.contactId === quick!.id)!.id)).toEqual([
      'listen:waiting',
      'listen:event',
      'joined:added',
      '-:completed',
    ]);
    expect(await em().count(SegmentMember, { segmentId: members.id, contactId: quick!.id })).toBe(1);
    expect(await em().count(SegmentMember, { segmentId: members.id, contactId: slow!.id })).toBe(0);

    // The buyer is now waiting an hour; the goal is met when they get the tag and the run is looked at.
    await em().nativeUpdate(Contact, { id: buyer!.id }, { tags: ['customer'] });
    await em().nativeUpdate(AutomationRun, { contactId: buyer!.id, automationId: automation.id }, { dueAt: new Date() });
    await wakeActors(temporal.client, h.stack.config, automationActorContract, [{ orgId, automationId: automation.id }]);
    await until(
      'the goal to end the run',
      () => runsOf(automation.id),
      (all) => all.find((r) => r.contactId === buyer!.id)?.exitReason === 'goal',
    );
    expect((await statsOf(h.stack.orm, orgId, automation.id)).activeRuns).toBe(1);
  });

  it('fails a run whose email cannot be sent (template unpublished since), skips suppressed contacts, and fails when credits run out', async () => {
    const template = await addPublishedTemplate(h.stack.orm, orgId, { subject: 'Hello', html: '<p>{{first_name}}</p>' });
    const automation = await addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'event', name: 'poke' },
      reentry: { mode: 'always' },
      start: 'send',
      steps: [{ id: 'send', type: 'send_email', template_id: template.id, from: senderOn(domain) }],
    });
    const [gone, quiet] = await addContacts(h.stack.orm, orgId, [`gone-${unique('f')}@example.com`, `quiet-${unique('f')}@example.com`]);
    await em().nativeUpdate(Contact, { id: quiet!.id }, { status: 'unsubscribed' });
    await em().nativeUpdate(Template, { id: template.id }, { status: 'draft' });
    await enrol(automation.id, [gone!.id, quiet!.id], 'event', 'poke');
    const runs = await until(
      'both runs to end',
      () => runsOf(automation.id),
      (all) => all.length === 2 && all.every((r) => r.status !== 'active'),
    );
    expect(runs.find((r) => r.contactId === gone!.id)).toMatchObject({ status: 'failed', error: expect.stringContaining('not published') });
    expect(runs.find((r) => r.contactId === quiet!.id)).toMatchObject({ status: 'completed' });
    expect(await timelineOf(runs.find((r) => r.contactId === quiet!.id)!.id)).toEqual(['send:skipped', '-:completed']);

    await em().nativeUpdate(Template, { id: template.id }, { status: 'published' });
    await setCredits(h.stack.orm, orgId, 0);
    await enrol(automation.id, [gone!.id], 'event', 'poke');
    const broke = await until(
      'the third run to end',
      () => runsOf(automation.id),
      (all) => all.length === 3 && all[2]!.status !== 'active',
    );
    expect(broke[2]).toMatchObject({ status: 'failed', error: expect.stringContaining('INSUFFICIENT_CREDITS') });
    // No endpoint subscribes to automation.run.failed, so these failures are not events (nobody would get them).
    expect(await em().count(Event, { type: 'automation.run.failed' })).toBe(0);
    expect(await statsOf(h.stack.orm, orgId, automation.id)).toMatchObject({
      totalRuns: 3,
      activeRuns: 0,
      completedRuns: 1,
      failedRuns: 2,
      emailsSent: 0,
    });
    await setCredits(h.stack.orm, orgId, 10_000);
  });
});
