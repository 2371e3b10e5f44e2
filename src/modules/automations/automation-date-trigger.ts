/**
 * The date trigger's scan (a background loop in every worker process): for each active
 * automation with a published date trigger, of every workspace, it enrols the contacts whose
 * date fires today in the automation's time zone (or each contact's own) once the local time
 * reached the trigger's `at` (automation-date.fns.ts). It reads only the contacts whose date
 * falls in the scanned days, through the date-key index, in pages keyed on the contact id; each
 * page claims its firing contacts' occurrence rows and enrols them in one transaction, so a restart, two workers or overlapping passes enrol a contact once
 * per occurrence; the automation's re-entry rule applies on top. A pass that runs late the same
 * local day still enrols that day; a day the scan never ran on is not caught up.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { scopeToOrg } from '../../../db/orm.ts';
import type { LoopSpec, PassContext } from '../../queue/background-loop.ts';
import { isTimeZone } from './automation-definition.ts';
import { contactFiresOn, dateMatch, scanDays, windowKeys } from './automation-date.fns.ts';
import {
  claimDateOccurrences,
  findDateAutomations,
  pruneDateOccurrences,
  readDateCandidates,
  type DateAutomation,
} from './automation-date.repo.ts';
import { enrolContacts, type TouchedAutomation } from './automation-runs.repo.ts';
import type { AutomationWaker } from './automation-wake.ts';

export interface DateTriggerScanOptions {
  orm: MikroORM;
  /** Wakes the actors of automations that got runs (else the automation reconciler does). */
  wakeAutomations?: AutomationWaker | undefined;
  /** Between passes (default 5 minutes). */
  intervalMs?: number;
  /** Contacts claimed and enrolled per transaction (default 500). */
  batchSize?: number;
  /** The clock (tests set the day and time). */
  now?: () => Date;
}

export function createDateTriggerScan(options: DateTriggerScanOptions): LoopSpec {
  const batchSize = options.batchSize ?? 500;
  const now = options.now ?? (() => new Date());
  return {
    name: 'automation date trigger',
    intervalMs: options.intervalMs ?? 5 * 60_000,
    async pass(context: PassContext): Promise<number> {
      const at = now();
      let enrolled = 0;
      for (const automation of await findDateAutomations(options.orm.em.fork())) {
        if (context.signal.aborted) break;
        enrolled += await scanAutomation(options.orm, automation, at, batchSize, context, options.wakeAutomations);
      }
      return enrolled;
    },
  };
}

/** Enrols one automation's contacts whose date fires at `at`, a page of candidates at a time; how many it claimed. */
async function scanAutomation(
  orm: MikroORM,
  automation: DateAutomation,
  at: Date,
  batchSize: number,
  context: PassContext,
  wake: AutomationWaker | undefined,
): Promise<number> {
  const { trigger, timezone } = automation;
  // Outside the contact's zone, nothing fires before `at` in the automation's: no read at all.
  if (trigger.zone !== 'contact' && !dateMatch(trigger, at, timezone)) return 0;
  const days = scanDays(trigger, at, timezone);
  const keys = windowKeys(trigger, days);
  const zones = new Map<string, boolean>();
  const isZone = (zone: string) => zones.get(zone) ?? zones.set(zone, isTimeZone(zone)).get(zone)!;
  let claimed = 0;
  let after = '';
  for (;;) {
    const page = await scopeToOrg(orm.em.fork(), automation.org_id).transactional(async (em) => {
      const candidates = await readDateCandidates(em, automation, keys, after, batchSize);
      const firing = candidates.flatMap((contact) => {
        const day = contactFiresOn(
          trigger,
          at,
          timezone,
          { value: contact.value, createdAt: new Date(contact.created_at), timezone: contact.timezone },
          isZone,
        );
        return day ? [{ contactId: contact.id, day }] : [];
      });
      const touched: TouchedAutomation[] = [];
      let count = 0;
      for (const [day, contactIds] of await claimDateOccurrences(em, automation, firing)) {
        count += contactIds.length;
        touched.push(
          ...(await enrolContacts(em, {
            orgId: automation.org_id,
            type: 'date',
            key: null,
            automationId: automation.id,
            contactIds,
            properties: { field: trigger.field, occurs_on: day },
          })),
        );
      }
      return { read: candidates.length, last: candidates.at(-1)?.id, count, touched };
    });
    claimed += page.count;
    if (wake && page.touched.length > 0) {
      try {
        wake(page.touched);
      } catch (error) {
        context.warn('waking automations', error);
      }
    }
    if (page.read < batchSize || !page.last || context.signal.aborted) break;
    after = page.last;
  }
  await pruneDateOccurrences(orm.em.fork(), automation, days[0]!);
  return claimed;
}
