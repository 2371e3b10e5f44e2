/**
 * The SQL of the per-workspace reputation policy: the workspaces that sent in the window and
 * are not paused, with their sent, bounced and complained counts over it (email_events,
 * indexed by workspace and time), and the pause and resume of a workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { WindowCounts } from './reputation.fns.ts';

export interface WorkspaceWindow extends WindowCounts {
  org_id: string;
  policy: Record<string, unknown> | null;
}

/**
 * Each unpaused workspace with events in the window of its policy (`defaultHours` unless its
 * policy says otherwise) ending at `now`, counted from when it was last resumed if that is later
 * (a resume starts a fresh window, so the events that caused the pause do not pause it again).
 */
export async function findWorkspaceWindows(em: EntityManager, now: Date, defaultHours: number): Promise<WorkspaceWindow[]> {
  const rows = await em.execute<(Omit<WorkspaceWindow, keyof WindowCounts> & Record<keyof WindowCounts, string>)[]>(
    `/* all workspaces: the reputation policy looks at every workspace; events join on org_id */
     with w as (
       select o.id as org_id, o.reputation_policy as policy,
              greatest(:now::timestamptz - make_interval(hours => coalesce((o.reputation_policy->>'window_hours')::int, :hours)),
                       coalesce((o.reputation_pause->>'resumed_at')::timestamptz, '-infinity')) as since
         from organizations o
        where o.reputation_paused_at is null
     )
     select w.org_id, w.policy,
            count(*) filter (where e.type = 'sent') as sent,
            count(*) filter (where e.type = 'bounced') as bounced,
            count(*) filter (where e.type = 'complained') as complained
       from w join email_events e on e.org_id = w.org_id and e.occurred_at >= w.since and e.occurred_at <= :now::timestamptz
        and e.type in ('sent', 'bounced', 'complained')
      group by w.org_id, w.policy`,
    { now: now.toISOString(), hours: defaultHours },
  );
  return rows.map((row) => ({ ...row, sent: Number(row.sent), bounced: Number(row.bounced), complained: Number(row.complained) }));
}

/** Pauses the workspace with `reason` unless it is paused already (false then). */
export async function pauseWorkspace(em: EntityManager, orgId: string, reason: Record<string, unknown>, at: Date): Promise<boolean> {
  const rows = await em.execute<{ id: string }[]>(
    `update organizations set reputation_paused_at = ?, reputation_pause = ?::jsonb, updated_at = now()
      where id = ? and reputation_paused_at is null returning id`,
    [at, JSON.stringify(reason), orgId],
  );
  return rows.length > 0;
}

/** Lifts the workspace's pause, keeping why it paused with who resumed it and when; null when it was not paused. */
export async function resumeWorkspace(
  em: EntityManager,
  orgId: string,
  resumedBy: string,
  at: Date,
): Promise<Record<string, unknown> | null> {
  const rows = await em.execute<{ reputation_pause: Record<string, unknown> }[]>(
    `update organizations
        set reputation_paused_at = null, updated_at = now(),
            reputation_pause = coalesce(reputation_pause, '{}'::jsonb) || jsonb_build_object('resumed_at', ?::text, 'resumed_by', ?::text)
      where id = ? and reputation_paused_at is not null
      returning reputation_pause`,
    [at.toISOString(), resumedBy, orgId],
  );
  return rows[0]?.reputation_pause ?? null;
}
