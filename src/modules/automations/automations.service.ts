/**
 * Automations of one workspace. The API reads them, renames and re-describes them, moves them
 * between its four states (any to any, as the spec's lifecycle table says) and archives them on DELETE; operators create
 * them (automations.admin.ts). Every change that alters a field increases `version` by one;
 * a request that changes nothing leaves the row (and its version) as it was. Changes run in a
 * transaction holding a row lock, so concurrent requests see each other's status and version.
 */
import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg, type EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { UpdateAutomationInput } from './automations.schemas.ts';

const notFound = (id: string) => new AppError('not_found', `Automation ${id} does not exist.`);

async function lockAutomation(em: EntityManager, id: string): Promise<Automation> {
  const automation = await em.findOne(Automation, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!automation) throw notFound(id);
  return automation;
}

/** Automations of one workspace at a time; every query runs through a workspace-scoped EntityManager. */
export function createAutomationsService({ orm }: { orm: MikroORM }) {
  return {
    /** Newest first, keyset-paginated on (createdAt, id); archived automations included. */
    async listAutomations(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), Automation, {}, page);
    },

    /** One automation of the workspace; 404 when absent or another workspace's. */
    async getAutomation(orgId: string, id: string): Promise<Automation> {
      const automation = await scopeToOrg(orm.em, orgId).findOne(Automation, { id });
      if (!automation) throw notFound(id);
      return automation;
    },

    /**
     * Applies name, description and status together. Any of the four states may follow any
     * other (the spec's lifecycle table: PATCH with a status moves the automation to the given
     * state); setting the current status again changes nothing.
     */
    async updateAutomation(orgId: string, id: string, input: UpdateAutomationInput): Promise<Automation> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const automation = await lockAutomation(em, id);
        let changed = false;
        if (input.name !== undefined && input.name !== automation.name) {
          automation.name = input.name;
          changed = true;
        }
        if (input.description !== undefined && input.description !== automation.description) {
          automation.description = input.description;
          changed = true;
        }
        if (input.status !== undefined && input.status !== automation.status) {
          automation.status = input.status;
          changed = true;
        }
        if (changed) automation.version += 1;
        return automation;
      });
    },

    /**
     * DELETE: archives the automation (any state may be archived). Archiving one that is
     * already archived succeeds without a change, so a retried DELETE is harmless.
     */
    async archiveAutomation(orgId: string, id: string): Promise<Automation> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const automation = await lockAutomation(em, id);
        if (automation.status !== 'archived') {
          automation.status = 'archived';
          automation.version += 1;
        }
        return automation;
      });
    },
  };
}

export type AutomationsService = ReturnType<typeof createAutomationsService>;
