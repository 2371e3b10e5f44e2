/**
 * What a change of an automation's status does to its runs, in the transaction of the change:
 * archiving ends every open run (exited, reason `archived`, with a timeline entry and the
 * counters adjusted); activating asks whether there are open runs for its actor to resume.
 * Raw SQL names the workspace in every statement.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { newId } from '../../../db/ids.ts';
import { addStats } from './automation-stats.repo.ts';

/**
 * Ends the automation's open runs: status `exited`, exit reason `archived`, ended now, no longer
 * due or waiting, and one `lifecycle` entry on each run's timeline; `activeRuns` goes down by as
 * many (an archived run is neither completed nor failed). The runs are locked first, so a drain
 * working one finishes its transaction before the run ends. Returns how many ended.
 */
export async function exitOpenRuns(em: EntityManager, orgId: string, automationId: string): Promise<number> {
  const open = await em.execute<{ id: string }[]>(
    `select id from automation_runs where org_id = ? and automation_id = ? and status = 'active' order by id for update`,
    [orgId, automationId],
  );
  if (open.length === 0) return 0;
  const pairs = JSON.stringify(open.map((run) => [run.id, newId()]));
  const ended = await em.execute<{ run_id: string }[]>(
    `with pairs as (select p->>0 as run_id, p->>1 as entry_id from jsonb_array_elements(?::jsonb) p),
     ended as (
       update automation_runs r
          set status = 'exited', exit_reason = 'archived', ended_at = now(), due_at = null, waiting_for = null,
              lease_until = null, updated_at = now()
         from pairs
        where r.org_id = ? and r.id = pairs.run_id and r.status = 'active'
       returning r.id, r.step_id, pairs.entry_id
     )
     insert into automation_run_steps (id, org_id, run_id, step_id, kind, outcome, detail, created_at)
     select ended.entry_id, ?, ended.id, coalesce(ended.step_id, 'archived'), 'lifecycle', 'exited',
            jsonb_build_object('reason', 'archived'), now()
       from ended
     returning run_id`,
    [pairs, orgId, orgId],
  );
  await addStats(em, orgId, new Map([[automationId, { activeRuns: -ended.length }]]));
  return ended.length;
}

/** Whether the automation has runs that are not over (the actor has work once it is active). */
export async function hasOpenRuns(em: EntityManager, orgId: string, automationId: string): Promise<boolean> {
  const [row] = await em.execute<{ open: boolean }[]>(
    `select exists (select 1 from automation_runs where org_id = ? and automation_id = ? and status = 'active') as open`,
    [orgId, automationId],
  );
  return row?.open === true;
}
