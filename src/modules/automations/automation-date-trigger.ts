/**
 * The date trigger's scan (a background loop in every worker process): for each active
 * automation with a published date trigger, of every workspace, it enrols the contacts whose
 * date fires today in the automation's time zone once the local time reached the trigger's
 * `at` (automation-date.fns.ts). Each batch claims its contacts' occurrence rows and enrols
 * them in one transaction, so a restart, two workers or overlapping passes enrol a contact once
 * per occurrence; the automation's re-entry rule applies on top. A pass that runs late the same
 * local day still enrols that day; a day the scan never ran on is not caught up.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { scopeToOrg } from '../../../db/orm.ts';
import type { LoopSpec, PassContext } from '../../queue/background-loop.ts';
import { dateMatch } from './automation-date.fns.ts';
import { claimDateOccurrences, findDateAutomations, pruneDateOccurrences, type DateAutomation } from './automation-date.repo.ts';
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

/** Enrols one automation's contacts whose date fires at `at`, batch by batch; how many it claimed. */
async function scanAutomation(
  orm: MikroORM,
  automation: DateAutomation,
  at: Date,
  batchSize: number,
  context: PassContext,
  wake: AutomationWaker | undefined,
): Promise<number> {
  const match = dateMatch(automation.trigger, at, automation.timezone);
  if (!match) return 0;
  let claimed = 0;
  for (;;) {
    const batch = await scopeToOrg(orm.em.fork(), automation.org_id).transactional(async (em) => {
      const contactIds = await claimDateOccurrences(em, automation, match, batchSize);
      const touched: TouchedAutomation[] =
        contactIds.length === 0
          ? []
          : await enrolContacts(em, {
              orgId: automation.org_id,
              type: 'date',
              key: null,
              automationId: automation.id,
              contactIds,
              properties: { field: automation.trigger.field, occurs_on: match.today },
            });
      return { count: contactIds.length, touched };
    });
    claimed += batch.count;
    if (wake) {
      try {
        wake(batch.touched);
      } catch (error) {
        context.warn('waking automations', error);
      }
    }
    if (batch.count < batchSize || context.signal.aborted) break;
  }
  await pruneDateOccurrences(orm.em.fork(), automation, match.today);
  return claimed;
}
