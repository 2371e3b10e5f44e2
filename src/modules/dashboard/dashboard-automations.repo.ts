/**
 * What the automations pages read beside the automations service: the counters (the shard
 * sums, automation-stats.repo.ts), an automation's runs and one run's timeline. No service of
 * the API reads runs yet, so these are entity queries through a workspace-scoped EntityManager.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import {
  AutomationDefinition,
  AutomationRun,
  AutomationRunStep,
  Contact,
  type AutomationRunStatus,
  type AutomationStats,
} from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { readStats } from '../automations/automation-stats.repo.ts';

/** A run's timeline is shown up to this many entries (a long loop of waits can make more). */
export const TIMELINE_LIMIT = 500;

export function createAutomationRunsReader({ orm }: { orm: MikroORM }) {
  return {
    /** The six counters of some automations of the workspace (zeros for one that never ran). */
    stats(orgId: string, automationIds: readonly string[]): Promise<Map<string, AutomationStats>> {
      return readStats(orm.em.fork(), orgId, automationIds);
    },

    /** An automation's runs, newest first, keyset-paginated on (createdAt, id); of one status when given. */
    listRuns(
      orgId: string,
      automationId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
      status?: AutomationRunStatus,
    ): Promise<KeysetPage<AutomationRun>> {
      return findKeysetPage(scopeToOrg(orm.em, orgId), AutomationRun, { automationId, ...(status ? { status } : {}) }, page);
    },

    /** One run of the automation; null when the workspace has no such run of it. */
    getRun(orgId: string, automationId: string, runId: string): Promise<AutomationRun | null> {
      return scopeToOrg(orm.em, orgId).findOne(AutomationRun, { id: runId, automationId });
    },

    /** A run's timeline in the order it happened (the first TIMELINE_LIMIT entries). */
    timeline(orgId: string, runId: string): Promise<AutomationRunStep[]> {
      return scopeToOrg(orm.em, orgId).find(
        AutomationRunStep,
        { runId },
        { orderBy: { createdAt: 'asc', id: 'asc' }, limit: TIMELINE_LIMIT },
      );
    },

    /** How many runs of the automation are still open (what archiving ends). */
    openRuns(orgId: string, automationId: string): Promise<number> {
      return scopeToOrg(orm.em, orgId).count(AutomationRun, { automationId, status: 'active' });
    },

    /** The email addresses of some contacts of the workspace, by id (a deleted contact is absent). */
    async contactEmails(orgId: string, contactIds: readonly string[]): Promise<Map<string, string>> {
      if (contactIds.length === 0) return new Map();
      const contacts = await scopeToOrg(orm.em, orgId).find(
        Contact,
        { id: { $in: [...new Set(contactIds)] } },
        { fields: ['id', 'email'] },
      );
      return new Map(contacts.map((contact) => [contact.id, contact.email]));
    },

    /** The version of each published definition named, by its id (runs keep the one they started on). */
    async definitionVersions(orgId: string, definitionIds: readonly string[]): Promise<Map<string, number>> {
      if (definitionIds.length === 0) return new Map();
      const rows = await scopeToOrg(orm.em, orgId).find(
        AutomationDefinition,
        { id: { $in: [...new Set(definitionIds)] } },
        { fields: ['id', 'version'] },
      );
      return new Map(rows.map((row) => [row.id, row.version]));
    },
  };
}

export type AutomationRunsReader = ReturnType<typeof createAutomationRunsReader>;
