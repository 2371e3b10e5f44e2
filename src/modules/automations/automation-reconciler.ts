import type { MikroORM } from '@mikro-orm/postgresql';
import type { Client } from '@temporalio/client';
import type { Config } from '../../config.ts';
import type { Logger } from '../../logger.ts';
import type { LoopSpec } from '../../queue/background-loop.ts';
import { automationActorContract } from '../../../workflows/automation.ts';
import { createActorReconciler } from '../../temporal/actor-reconciler.ts';

export interface AutomationReconcilerOptions {
  orm: MikroORM;
  temporal: Client;
  config: Pick<Config, 'temporal'>;
  logger: Logger;
  /** Between passes (default 5 s). */
  intervalMs?: number;
  /** A run due this long with no drain of its automation running gets the actor woken (default 2 s). */
  afterMs?: number;
  /** Automations woken per pass at most (default 200). */
  batchSize?: number;
}

/**
 * The automation reconciler (a background loop in every worker process): wakes the actor of
 * each active automation that has a run due for `afterMs` while no drain holds its lease. This
 * is how a long wait ends when the actor's own timer was lost (the actor ended, Temporal lost
 * its state) and how a lost wake-up (enrolment committed, signal never sent) costs latency,
 * never a run. Reads the due index (automation_id, due_at) of active runs.
 */
export function createAutomationReconciler(options: AutomationReconcilerOptions): LoopSpec {
  const { orm } = options;
  const afterMs = options.afterMs ?? 2_000;
  const batchSize = options.batchSize ?? 200;
  return createActorReconciler({
    ...options,
    name: 'automation reconciler',
    actor: automationActorContract,
    intervalMs: options.intervalMs ?? 5_000,
    async findStranded() {
      const stranded = await orm.em.getConnection().execute<{ id: string; org_id: string }[]>(
        `/* all workspaces: active automations with runs due and no drain running */
         select a.id, a.org_id from automations a
          where a.status = 'active' and not coalesce(a.drain_lease_until > now(), false)
            and exists (select 1 from automation_runs r
                         where r.automation_id = a.id and r.status = 'active' and r.due_at <= now() - make_interval(secs => ?))
          limit ?`,
        [afterMs / 1000, batchSize],
      );
      return stranded.map((a) => ({ orgId: a.org_id, automationId: a.id }));
    },
  });
}
