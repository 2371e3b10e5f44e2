/**
 * The operator CLI's automation commands (`herald admin automation …`): create an automation
 * with its definition, publish a new version, export the published one. Publishing goes
 * through the authoring (automation-authoring.ts), so a definition is checked exactly as the
 * dashboard checks it; the CLI finds the workspace of an automation from its id.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation, Organization, AUTOMATION_STATUSES, type AutomationStatus } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { AutomationDefinition } from './automation-definition.ts';
import { createAutomationAuthoring } from './automation-authoring.ts';

export function createAutomationsAdmin({ orm }: { orm: MikroORM }) {
  const authoring = createAutomationAuthoring({ orm });

  /** The workspace of an automation, whichever it is (operators name automations by id alone). */
  async function workspaceOf(automationId: string): Promise<string> {
    const automation = await orm.em.fork().findOne(Automation, { id: automationId.toLowerCase() }, ALL_TENANTS);
    if (!automation) throw new AppError('not_found', `automation ${automationId} does not exist`);
    return automation.orgId;
  }

  return {
    /**
     * A new automation, in `status` (draft by default), with `definition` published as version 1
     * when one is given; without one it enrols nobody until `publishDefinition`.
     */
    async createAutomation(input: { orgId: string; name: string; description?: string; definition?: unknown; status?: string }) {
      const status = input.status ?? 'draft';
      if (!(AUTOMATION_STATUSES as readonly string[]).includes(status)) {
        throw new AppError('invalid_request', `status must be one of ${AUTOMATION_STATUSES.join(', ')}`);
      }
      if (!(await orm.em.fork().findOne(Organization, { id: input.orgId }))) {
        throw new AppError('not_found', `workspace ${input.orgId} does not exist`);
      }
      const created = await authoring.create(input.orgId, {
        name: input.name,
        ...(input.description !== undefined ? { description: input.description } : {}),
        ...(input.definition !== undefined ? { definition: input.definition } : {}),
      });
      if (status === 'draft') return created;
      const em = scopeToOrg(orm.em, input.orgId);
      const automation = await em.findOneOrFail(Automation, { id: created.id });
      automation.status = status as AutomationStatus;
      await em.flush();
      return automation;
    },

    /** Publishes `definition` as the automation's next version (runs in flight keep theirs). */
    async publishDefinition(automationId: string, definition: unknown): Promise<Automation> {
      return authoring.publish(await workspaceOf(automationId), automationId.toLowerCase(), definition);
    },

    /** The published definition and its version; not_found when none was published. */
    async exportDefinition(automationId: string): Promise<{ automationId: string; version: number; definition: AutomationDefinition }> {
      const id = automationId.toLowerCase();
      const published = await authoring.definition(await workspaceOf(id), id);
      if (!published) throw new AppError('not_found', `automation ${id} has no published definition`);
      return { automationId: id, ...published };
    },

    async listAutomations(orgId: string) {
      return orm.em.fork().find(Automation, { orgId }, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
    },
  };
}
