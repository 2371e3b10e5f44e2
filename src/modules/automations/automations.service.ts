/**
 * Automations of one workspace. The API reads them, renames and re-describes them, moves them
 * between its four states (any to any, as the spec's lifecycle table says) and archives them on
 * DELETE; operators and the dashboard create them and publish their definitions
 * (automation-authoring.ts). Every change that alters a field increases `version` by one; a
 * request that changes nothing leaves the row (and its version) as it was. Changes run in a
 * transaction holding a row lock, so concurrent requests see each other's status and version.
 *
 * What a status change does to runs: `archived` ends every open run in the same transaction
 * (automation-lifecycle.repo.ts); `active` wakes the automation's actor after the commit when
 * it has open runs (a paused automation's runs were held by its drain); `paused` and `draft`
 * leave runs alone (the drain holds them). `stats` are the sums of the counter shards.
 */
import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation, type AutomationStats } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg, type EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { exitOpenRuns, hasOpenRuns } from './automation-lifecycle.repo.ts';
import type { TouchedAutomation } from './automation-runs.repo.ts';
import { readStats } from './automation-stats.repo.ts';
import type { AutomationWaker } from './automation-wake.ts';
import type { UpdateAutomationInput } from './automations.schemas.ts';

/** An automation with its counters. */
export interface AutomationWithStats {
  automation: Automation;
  stats: AutomationStats;
}

const notFound = (id: string) => new AppError('not_found', `Automation ${id} does not exist.`);

async function lockAutomation(em: EntityManager, id: string): Promise<Automation> {
  const automation = await em.findOne(Automation, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!automation) throw notFound(id);
  return automation;
}

async function withStats(em: EntityManager, automation: Automation): Promise<AutomationWithStats> {
  const stats = await readStats(em, automation.orgId, [automation.id]);
  return { automation, stats: stats.get(automation.id)! };
}

/**
 * Moves a locked automation to `status` inside the caller's transaction: archiving ends its open
 * runs; activating returns the automation for the caller to wake after the commit when it has
 * open runs. Returns null when there is nothing to wake.
 */
async function moveTo(em: EntityManager, automation: Automation, status: Automation['status']): Promise<TouchedAutomation | null> {
  const from = automation.status;
  automation.status = status;
  if (status === 'archived') await exitOpenRuns(em, automation.orgId, automation.id);
  if (status !== 'active' || from === 'active' || !(await hasOpenRuns(em, automation.orgId, automation.id))) return null;
  return { orgId: automation.orgId, automationId: automation.id, draining: (automation.drainLeaseUntil?.getTime() ?? 0) > Date.now() };
}

/** Automations of one workspace at a time; every query runs through a workspace-scoped EntityManager. */
export function createAutomationsService({ orm, wake }: { orm: MikroORM; wake?: AutomationWaker }) {
  /** Runs a change under the row lock; wakes the actor after the commit when the change asks for it. */
  async function change(
    orgId: string,
    id: string,
    apply: (em: EntityManager, automation: Automation) => Promise<TouchedAutomation | null>,
  ): Promise<AutomationWithStats> {
    const { result, touched } = await scopeToOrg(orm.em, orgId).transactional(async (em) => {
      const automation = await lockAutomation(em, id);
      const touched = await apply(em, automation);
      await em.flush();
      return { result: await withStats(em, automation), touched };
    });
    if (touched) wake?.([touched]);
    return result;
  }

  return {
    /** Newest first, keyset-paginated on (createdAt, id); archived automations included; `stats` per automation. */
    async listAutomations(
      orgId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
    ): Promise<KeysetPage<Automation> & { stats: Map<string, AutomationStats> }> {
      const em = scopeToOrg(orm.em, orgId);
      const found = await findKeysetPage(em, Automation, {}, page);
      const stats = await readStats(
        em,
        orgId,
        found.items.map((a) => a.id),
      );
      return { ...found, stats };
    },

    /** One automation of the workspace; 404 when absent or another workspace's. */
    async getAutomation(orgId: string, id: string): Promise<AutomationWithStats> {
      const em = scopeToOrg(orm.em, orgId);
      const automation = await em.findOne(Automation, { id });
      if (!automation) throw notFound(id);
      return withStats(em, automation);
    },

    /**
     * Applies name, description and status together. Any of the four states may follow any
     * other (the spec's lifecycle table: PATCH with a status moves the automation to the given
     * state); setting the current status again changes nothing.
     */
    async updateAutomation(orgId: string, id: string, input: UpdateAutomationInput): Promise<AutomationWithStats> {
      return change(orgId, id, async (em, automation) => {
        let changed = false;
        let touched: TouchedAutomation | null = null;
        if (input.name !== undefined && input.name !== automation.name) {
          automation.name = input.name;
          changed = true;
        }
        if (input.description !== undefined && input.description !== automation.description) {
          automation.description = input.description;
          changed = true;
        }
        if (input.status !== undefined && input.status !== automation.status) {
          touched = await moveTo(em, automation, input.status);
          changed = true;
        }
        if (changed) automation.version += 1;
        return touched;
      });
    },

    /**
     * DELETE: archives the automation (any state may be archived), ending its open runs.
     * Archiving one that is already archived succeeds without a change, so a retried DELETE is
     * harmless.
     */
    async archiveAutomation(orgId: string, id: string): Promise<AutomationWithStats> {
      return change(orgId, id, async (em, automation) => {
        if (automation.status === 'archived') return null;
        automation.version += 1;
        return moveTo(em, automation, 'archived');
      });
    },
  };
}

export type AutomationsService = ReturnType<typeof createAutomationsService>;
