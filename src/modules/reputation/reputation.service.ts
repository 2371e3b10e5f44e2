import type { MikroORM } from '@mikro-orm/postgresql';
import { Organization } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { recordEvent } from '../events/events.fns.ts';
import { DEFAULT_REPUTATION_POLICY, judgeWindow, resolvePolicy, type ReputationPolicy } from './reputation.fns.ts';
import { findWorkspaceWindows, pauseWorkspace, resumeWorkspace } from './reputation.repo.ts';

/** A workspace's reputation standing: its policy, and the pause in force (null when sending). */
export interface ReputationStatus {
  policy: ReputationPolicy;
  paused_at: string | null;
  pause: Record<string, unknown> | null;
}

/**
 * The per-workspace reputation policy: a pass over every workspace's sliding window (run by the
 * reputation loop in the worker) pauses those past their thresholds, with a
 * `workspace.reputation_paused` event in the same transaction; an operator resumes one
 * (`herald admin workspace resume-sending`), with `workspace.reputation_resumed`. The pause
 * itself is read where sending happens: the domain queue's claims hold broadcast messages, and
 * acceptance refuses new sends when the policy pauses everything.
 */
export function createReputationService(deps: { orm: MikroORM }) {
  const { orm } = deps;
  return {
    /** Judges every unpaused workspace's window ending at `now`; resolves with how many it paused. */
    async evaluate(now: Date = new Date()): Promise<number> {
      const windows = await findWorkspaceWindows(orm.em.fork(), now, DEFAULT_REPUTATION_POLICY.window_hours);
      let paused = 0;
      for (const window of windows) {
        const pause = judgeWindow(resolvePolicy(window.policy), window);
        if (!pause) continue;
        const data = { ...pause, paused_at: now.toISOString() };
        const done = await orm.em.fork().transactional(async (em) => {
          if (!(await pauseWorkspace(em, window.org_id, data, now))) return false;
          recordEvent(em, window.org_id, 'workspace.reputation_paused', data);
          return true;
        });
        if (done) paused += 1;
      }
      return paused;
    },

    /** Lifts a workspace's pause (409 when it is not paused); `by` names who, for the record and the event. */
    async resume(orgId: string, by: string, now: Date = new Date()): Promise<Record<string, unknown>> {
      return orm.em.fork().transactional(async (em) => {
        if (!(await em.findOne(Organization, { id: orgId }))) throw new AppError('not_found', `workspace ${orgId} does not exist`);
        const record = await resumeWorkspace(em, orgId, by, now);
        if (!record) throw new AppError('conflict', `workspace ${orgId} is not paused by its reputation policy`);
        recordEvent(em, orgId, 'workspace.reputation_resumed', record);
        return record;
      });
    },

    async status(orgId: string): Promise<ReputationStatus> {
      const org = await orm.em.fork().findOne(Organization, { id: orgId });
      if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
      return {
        policy: resolvePolicy(org.reputationPolicy),
        paused_at: org.reputationPausedAt ? org.reputationPausedAt.toISOString() : null,
        pause: org.reputationPausedAt ? (org.reputationPause ?? null) : null,
      };
    },

    /** Sets the workspace's policy overrides (null: the defaults). */
    async setPolicy(orgId: string, overrides: Partial<ReputationPolicy> | null): Promise<ReputationPolicy> {
      const em = orm.em.fork();
      const org = await em.findOne(Organization, { id: orgId });
      if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
      org.reputationPolicy = overrides && Object.keys(overrides).length > 0 ? { ...overrides } : null;
      await em.flush();
      return resolvePolicy(org.reputationPolicy);
    },
  };
}

export type ReputationService = ReturnType<typeof createReputationService>;
