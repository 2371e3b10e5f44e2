import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationDateOccurrence, AutomationRun, Contact } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { createLogger } from '../../src/logger.ts';
import { createDateTriggerScan } from '../../src/modules/automations/automation-date-trigger.ts';
import { addDays } from '../../src/modules/automations/automation-date.fns.ts';
import { createAutomationWaker } from '../../src/modules/automations/automation-wake.ts';
import { startLoop, type BackgroundLoop } from '../../src/queue/background-loop.ts';
import { connectTemporalClient, type TemporalClientHandle } from '../../src/temporal/client.ts';
import { installTemporalLogging, startWorker, type RunningWorker } from '../../src/worker.ts';
import { startApiHarness, type ApiHarness } from '../support/api.ts';
import { addActiveAutomation } from '../support/automations.ts';
import { createOrgWithKey, unique } from '../support/factories.ts';

/**
 * The date trigger's scan against PostgreSQL with a real worker: contacts whose date fires on
 * the scan's (fixed) day are enrolled once per occurrence, whatever the number of passes or
 * scanners, and their runs are advanced by the automation actor. The worker's own scan runs on
 * the real clock, on another day, and finds nothing of these contacts.
 */
describe('date trigger scan (PostgreSQL → enrolment → automation actor)', () => {
  let h: ApiHarness;
  let worker: RunningWorker;
  let temporal: TemporalClientHandle;
  const loops: BackgroundLoop[] = [];

  // The scan's day is half a year from the real one, so the worker's own scan never fires for
  // these contacts; 12:00 UTC is 13:00 or 14:00 in Paris, past the trigger's 09:00 there.
  const DAY = addDays(new Date().toISOString().slice(0, 10), 180);
  const NOW = new Date(`${DAY}T12:00:00Z`);
  const NEXT_DAY = addDays(DAY, 1);
  /** `MM-DD` of a day; contacts' years are leap years so a Feb 29 stays a date. */
  const monthDay = (day: string) => day.slice(5);

  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new Error(`${what} never happened: ${JSON.stringify(value)}`);
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }

  /** A scanner with the clock at `now`, as one worker's loop; poked by the test. */
  function scanner(now: Date): BackgroundLoop {
    const wakeAutomations = createAutomationWaker({ client: temporal.client, config: h.stack.config, logger: createLogger('silent') });
    const loop = startLoop(
      createDateTriggerScan({ orm: h.stack.orm, wakeAutomations, now: () => now, intervalMs: 3_600_000, batchSize: 2 }),
      { logger: createLogger('silent') },
    );
    loops.push(loop);
    return loop;
  }

  /** An active date automation whose one step tags the contact; re-entry `always`, so only the occurrence key holds a second enrolment back. */
  const dateAutomation = (orgId: string, trigger: Record<string, unknown>) =>
    addActiveAutomation(h.stack.orm, orgId, {
      trigger: { type: 'date', ...trigger },
      reentry: { mode: 'always' },
      timezone: 'Europe/Paris',
      start: 'greet',
      steps: [{ id: 'greet', type: 'update_contact', add_tags: ['greeted'] }],
    });

  async function contact(orgId: string, customFields: Record<string, unknown>): Promise<Contact> {
    const em = scopeToOrg(h.stack.orm.em.fork(), orgId);
    const row = em.create(Contact, { orgId, email: `${unique('date')}@example.com`, customFields });
    await em.flush();
    return row;
  }

  const runsOf = async (orgId: string, automationId: string) =>
    (await scopeToOrg(h.stack.orm.em.fork(), orgId).find(AutomationRun, { automationId })).map((run) => ({
      contactId: run.contactId,
      status: run.status,
    }));
  const enrolledContacts = async (orgId: string, automationId: string) =>
    (await runsOf(orgId, automationId)).map((run) => run.contactId).sort();

  beforeAll(async () => {
    h = await startApiHarness();
    installTemporalLogging(createLogger('silent'));
    worker = await startWorker(h.stack.config, createLogger('silent'));
    temporal = await connectTemporalClient(h.stack.config);
  }, 120_000);

  afterAll(async () => {
    for (const loop of loops) await loop.stop();
    await worker?.shutdown();
    await temporal?.close();
    await h?.close();
  });

  it('enrols a contact whose date is today once across passes and scanners, not tomorrow’s, each automation and workspace on its own', async () => {
    const orgId = h.workspace.org.id;
    const other = (await createOrgWithKey(h.stack.orm)).org.id;
    const birthdays = await dateAutomation(orgId, { field: 'custom.birthday', repeat: 'yearly' });
    const renewals = await dateAutomation(orgId, { field: 'custom.renewal', repeat: 'once', offset_days: -3 });
    const elsewhere = await dateAutomation(other, { field: 'custom.birthday', repeat: 'yearly' });

    const today = await contact(orgId, { birthday: `1988-${monthDay(DAY)}` });
    const tomorrow = await contact(orgId, { birthday: `1988-${monthDay(NEXT_DAY)}` });
    const both = await contact(orgId, { birthday: `1984-${monthDay(DAY)}T23:00:00Z`, renewal: addDays(DAY, 3) });
    const renewing = await contact(orgId, { renewal: addDays(DAY, 3) });
    const unparsable = await contact(orgId, { birthday: 'soon', renewal: 18 });
    const thisYear = await contact(orgId, { birthday: DAY });
    const theirs = await contact(other, { birthday: `2000-${monthDay(DAY)}` });

    // Before 09:00 in Paris (06:30 UTC is 07:30 or 08:30 there) nothing fires.
    expect(await scanner(new Date(`${DAY}T06:30:00Z`)).poke()).toBe(0);
    expect(await runsOf(orgId, birthdays.id)).toEqual([]);

    // Two scanners, as two workers: their first passes run at once as they start (batches of 2, so
    // several transactions per automation); the passes poked after them find nothing left.
    const first = scanner(NOW);
    const second = scanner(NOW);
    expect(await Promise.all([first.poke(), second.poke()])).toEqual([0, 0]);
    expect(await first.poke()).toBe(0);

    expect(await enrolledContacts(orgId, birthdays.id)).toEqual([today.id, both.id].sort());
    expect(await enrolledContacts(orgId, renewals.id)).toEqual([both.id, renewing.id].sort());
    expect(await enrolledContacts(other, elsewhere.id)).toEqual([theirs.id]);
    for (const absent of [tomorrow.id, unparsable.id, thisYear.id]) {
      expect(await enrolledContacts(orgId, birthdays.id)).not.toContain(absent);
    }
    const occurrences = await scopeToOrg(h.stack.orm.em.fork(), orgId).find(AutomationDateOccurrence, { automationId: birthdays.id });
    expect(occurrences.map((o) => [o.contactId, String(o.occursOn)]).sort()).toEqual(
      [
        [both.id, DAY],
        [today.id, DAY],
      ].sort(),
    );

    // The actor runs each enrolled contact's steps to the end.
    for (const [org, automationId] of [
      [orgId, birthdays.id],
      [orgId, renewals.id],
      [other, elsewhere.id],
    ] as const) {
      await until(
        'the runs to complete',
        () => runsOf(org, automationId),
        (runs) => runs.length > 0 && runs.every((run) => run.status === 'completed'),
      );
    }
    const greeted = await scopeToOrg(h.stack.orm.em.fork(), orgId).findOneOrFail(Contact, { id: today.id });
    expect(greeted.tags).toContain('greeted');

    // The next day is another occurrence for a yearly date: tomorrow's contact now, nobody twice.
    expect(await scanner(new Date(`${NEXT_DAY}T12:00:00Z`)).poke()).toBe(0);
    expect(await enrolledContacts(orgId, birthdays.id)).toEqual([today.id, both.id, tomorrow.id].sort());
  }, 90_000);
});
