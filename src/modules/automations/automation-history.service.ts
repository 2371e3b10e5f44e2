/**
 * An automation's run history for the API (scope automations:read): its runs, newest first,
 * one run with its timeline, and the published definition. Every read goes through a
 * workspace-scoped EntityManager; another workspace's automation or run is not found.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation, AutomationDefinition, AutomationRun, AutomationRunStep } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg, type EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { AutomationDefinition as Definition } from './automation-definition.ts';
import type { ListRunsFilters } from './automations.schemas.ts';

async function findAutomation(em: EntityManager, id: string): Promise<Automation> {
  const automation = await em.findOne(Automation, { id: id.toLowerCase() });
  if (!automation) throw new AppError('not_found', `Automation ${id} does not exist.`);
  return automation;
}

/** The version of each definition the runs follow. */
async function definitionVersions(em: EntityManager, runs: readonly AutomationRun[]): Promise<Map<string, number>> {
  const ids = [...new Set(runs.map((run) => run.definitionId))];
  if (ids.length === 0) return new Map();
  const rows = await em.find(AutomationDefinition, { id: { $in: ids } }, { fields: ['id', 'version'] });
  return new Map(rows.map((row) => [row.id, row.version]));
}

export function createAutomationHistory({ orm }: { orm: MikroORM }) {
  return {
    /** The automation's runs, newest first, keyset-paginated on (createdAt, id); with the definition version of each. */
    async listRuns(
      orgId: string,
      automationId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
      filters: ListRunsFilters,
    ): Promise<KeysetPage<AutomationRun> & { versions: Map<string, number> }> {
      const em = scopeToOrg(orm.em, orgId);
      const automation = await findAutomation(em, automationId);
      const found = await findKeysetPage(
        em,
        AutomationRun,
        {
          automationId: automation.id,
          ...(filters.status ? { status: filters.status } : {}),
          ...(filters.contact_id ? { contactId: filters.contact_id.toLowerCase() } : {}),
        },
        page,
      );
      return { ...found, versions: await definitionVersions(em, found.items) };
    },

    /** One run of the automation with its timeline in order; 404 when the run is not the automation's. */
    async getRun(
      orgId: string,
      automationId: string,
      runId: string,
    ): Promise<{ run: AutomationRun; version: number; timeline: AutomationRunStep[] }> {
      const em = scopeToOrg(orm.em, orgId);
      const automation = await findAutomation(em, automationId);
      const run = await em.findOne(AutomationRun, { id: runId.toLowerCase(), automationId: automation.id });
      if (!run) throw new AppError('not_found', `Automation ${automation.id} has no run ${runId}.`);
      const timeline = await em.find(AutomationRunStep, { runId: run.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
      const versions = await definitionVersions(em, [run]);
      return { run, version: versions.get(run.definitionId) ?? 0, timeline };
    },

    /**
     * The definition new runs start on, with its version; 404 (details.reason
     * DEFINITION_NOT_PUBLISHED) for an automation that has none yet.
     */
    async publishedDefinition(orgId: string, automationId: string): Promise<{ version: number; definition: Definition }> {
      const em = scopeToOrg(orm.em, orgId);
      const automation = await findAutomation(em, automationId);
      const row = automation.definitionId ? await em.findOne(AutomationDefinition, { id: automation.definitionId }) : null;
      if (!row) {
        throw new AppError('not_found', `Automation ${automation.id} has no published definition yet.`, {
          reason: 'DEFINITION_NOT_PUBLISHED',
        });
      }
      return { version: row.version, definition: row.definition as Definition };
    },
  };
}

export type AutomationHistory = ReturnType<typeof createAutomationHistory>;
