import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AutomationRun, Contact } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import { arrayLiteral } from '../../db/prepared.ts';
import { createDateTriggerScan } from '../../src/modules/automations/automation-date-trigger.ts';
import { addDays, windowKeys } from '../../src/modules/automations/automation-date.fns.ts';
import { DATE_CANDIDATES_SQL } from '../../src/modules/automations/automation-date.repo.ts';
import { addActiveAutomation } from '../support/automations.ts';
import { createOrg, unique } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * The date trigger's scan against PostgreSQL, without Temporal (the runs are only enrolled):
 * it reads the contacts whose date falls in the scanned days through the date-key index, not
 * the workspace's other contacts, and a trigger in each contact's time zone fires on every
 * contact's own local day, from UTC+14 to UTC-12, once.
 */
describe('date trigger scan (PostgreSQL)', () => {
  let stack: TestStack;
  // A fixed day years ahead: every contact date below is in an earlier year.
  const DAY = '2031-06-15';
  const monthDay = (day: string) => day.slice(5);

  beforeAll(async () => {
    stack = await createTestStack();
  });
  afterAll(async () => {
    await stack?.close();
  });

  /** One pass of the scan with its clock at `iso`: how many contacts it enrolled. */
  const passAt = (iso: string) =>
    createDateTriggerScan({ orm: stack.orm, now: () => new Date(iso), batchSize: 3 }).pass({
      signal: new AbortController().signal,
      warn: (what, error) => {
        throw new Error(`${what}: ${String(error)}`);
      },
    });

  async function contact(orgId: string, customFields: Record<string, unknown>, createdAt?: Date): Promise<Contact> {
    const em = scopeToOrg(stack.orm.em.fork(), orgId);
    const row = em.create(Contact, { orgId, email: `${unique('date')}@example.com`, customFields, ...(createdAt ? { createdAt } : {}) });
    await em.flush();
    return row;
  }

  const enrolled = async (orgId: string, automationId: string) =>
    (await scopeToOrg(stack.orm.em.fork(), orgId).find(AutomationRun, { automationId })).map((run) => run.contactId).sort();

  it('reads only the contacts whose date is in the window, through the date-key index, in keyset pages', async () => {
    const org = (await createOrg(stack.orm)).org.id;
    const automation = await addActiveAutomation(stack.orm, org, {
      trigger: { type: 'date', field: 'custom.birthday', repeat: 'yearly' },
      reentry: { mode: 'always' },
      start: 'bye',
      steps: [{ id: 'bye', type: 'exit' }],
    });
    // 20,000 contacts whose birthday is on any other day of the year, and 7 on the day (more
    // than two pages of 3).
    await stack.orm.em.getConnection().execute(
      `insert into contacts (id, org_id, email, custom_fields, tags, status, created_at, updated_at)
       select lpad(to_hex(i), 24, '0'), ?, 'far' || i || '@example.com',
              jsonb_build_object('birthday', to_char(date '1990-01-01' + (i % 365), 'YYYY-MM-DD')),
              '{}', 'active', now(), now()
         from generate_series(1, 20000) i
        where to_char(date '1990-01-01' + (i % 365), 'MM-DD') <> ?`,
      [org, monthDay(DAY)],
    );
    const due = [];
    for (let k = 0; k < 7; k += 1) due.push((await contact(org, { birthday: `19${70 + k}-${monthDay(DAY)}` })).id);
    await stack.orm.em.getConnection().execute('analyze contacts');

    const keys = windowKeys({ type: 'date', field: 'custom.birthday', repeat: 'yearly', offset_days: 0, at: '09:00' }, [DAY]);
    const explained = await scopeToOrg(stack.orm.em.fork(), org).execute<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(
      `explain (analyze, format json) ${DATE_CANDIDATES_SQL}`,
      { org, keys: arrayLiteral(keys), after: '', name: 'birthday', limit: 500 },
    );
    const nodes = flatten(explained[0]!['QUERY PLAN'][0]!.Plan);
    const onContacts = nodes.filter((node) => node['Relation Name'] === 'contacts');
    expect(onContacts.map((node) => node['Node Type'])).not.toContain('Seq Scan');
    expect(nodes.some((node) => node['Index Name'] === 'contacts_date_keys_index')).toBe(true);
    // Rows of contacts read: those returned plus those the scan's filter or recheck threw away.
    const read = onContacts.reduce(
      (sum, node) => sum + node['Actual Rows'] + (node['Rows Removed by Filter'] ?? 0) + (node['Rows Removed by Index Recheck'] ?? 0),
      0,
    );
    expect(read).toBeLessThanOrEqual(due.length);

    expect(await passAt(`${DAY}T10:00:00Z`)).toBe(due.length);
    expect(await enrolled(org, automation.id)).toEqual(due.sort());
    expect(await passAt(`${DAY}T11:00:00Z`)).toBe(0);
    // Its contacts' birthdays cover the year: paused, it leaves the next test's passes alone.
    await stack.orm.em.getConnection().execute(`update automations set status = 'paused' where id = ?`, [automation.id]);
  }, 60_000);

  it('fires a trigger in the contact’s time zone on each contact’s local day once, from UTC+14 to UTC-12', async () => {
    const org = (await createOrg(stack.orm)).org.id;
    const birthdays = await addActiveAutomation(stack.orm, org, {
      trigger: { type: 'date', field: 'custom.birthday', repeat: 'yearly', zone: 'contact' },
      reentry: { mode: 'always' },
      timezone: 'UTC',
      start: 'bye',
      steps: [{ id: 'bye', type: 'exit' }],
    });
    const signups = await addActiveAutomation(stack.orm, org, {
      trigger: { type: 'date', field: 'created_at', repeat: 'yearly', zone: 'contact' },
      reentry: { mode: 'always' },
      timezone: 'UTC',
      start: 'bye',
      steps: [{ id: 'bye', type: 'exit' }],
    });
    const birthday = `1990-${monthDay(DAY)}`;
    const kiritimati = await contact(org, { birthday, timezone: 'Pacific/Kiritimati' });
    const bakerIsland = await contact(org, { birthday, timezone: 'Etc/GMT+12' });
    const utc = await contact(org, { birthday });
    const unknownZone = await contact(org, { birthday, timezone: 'Mars/Olympus' });
    const kiritimatiTomorrow = await contact(org, { birthday: `1990-${monthDay(addDays(DAY, 1))}`, timezone: 'Pacific/Kiritimati' });
    // Signed up at 20:00 UTC the day before, which was already DAY in Kiritimati.
    const signedUp = await contact(org, { timezone: 'Pacific/Kiritimati' }, new Date(`2029-${monthDay(addDays(DAY, -1))}T20:00:00Z`));

    const previous = addDays(DAY, -1);
    // 09:00 on DAY in Kiritimati (UTC+14) is 19:00 UTC the day before.
    expect(await passAt(`${previous}T18:59:00Z`)).toBe(0);
    expect(await passAt(`${previous}T19:00:00Z`)).toBe(2);
    expect(await enrolled(org, birthdays.id)).toEqual([kiritimati.id]);
    expect(await enrolled(org, signups.id)).toEqual([signedUp.id]);
    // 09:00 UTC: the contacts in UTC and in a zone that does not exist (the automation's, UTC).
    expect(await passAt(`${DAY}T09:00:00Z`)).toBe(2);
    expect(await enrolled(org, birthdays.id)).toEqual([kiritimati.id, utc.id, unknownZone.id].sort());
    // 19:00 UTC is 09:00 of the next day in Kiritimati; on Baker Island (UTC-12) it is 07:00 on DAY.
    expect(await passAt(`${DAY}T19:00:00Z`)).toBe(1);
    expect(await passAt(`${DAY}T20:59:00Z`)).toBe(0);
    expect(await passAt(`${DAY}T21:00:00Z`)).toBe(1);
    expect(await enrolled(org, birthdays.id)).toEqual(
      [kiritimati.id, bakerIsland.id, utc.id, unknownZone.id, kiritimatiTomorrow.id].sort(),
    );
    // The next UTC day: everyone's DAY is over or done, nobody is enrolled twice.
    expect(await passAt(`${addDays(DAY, 1)}T11:59:00Z`)).toBe(0);
    expect(await enrolled(org, signups.id)).toEqual([signedUp.id]);
  }, 60_000);
});

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Actual Rows': number;
  'Rows Removed by Filter'?: number;
  'Rows Removed by Index Recheck'?: number;
  Plans?: PlanNode[];
}

function flatten(node: PlanNode): PlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}
