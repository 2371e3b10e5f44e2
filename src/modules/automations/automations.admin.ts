import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation, Organization, AUTOMATION_STATUSES, type AutomationStatus } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';

/** Operators create automations (the API can only rename, re-state and archive them). */
export function createAutomationsAdmin({ orm }: { orm: MikroORM }) {
  return {
    async createAutomation(input: { orgId: string; name: string; triggerType: string; status?: string }) {
      const status = input.status ?? 'draft';
      if (!(AUTOMATION_STATUSES as readonly string[]).includes(status)) {
        throw new AppError('invalid_request', `status must be one of ${AUTOMATION_STATUSES.join(', ')}`);
      }
      const name = input.name.trim();
      if (name.length < 1 || name.length > 120) {
        throw new AppError('invalid_request', 'name must be 1 to 120 characters');
      }
      if (!input.triggerType.trim()) throw new AppError('invalid_request', 'trigger is required');
      const em = orm.em.fork();
      if (!(await em.findOne(Organization, { id: input.orgId }))) {
        throw new AppError('not_found', `workspace ${input.orgId} does not exist`);
      }
      const automation = em.create(Automation, {
        orgId: input.orgId,
        name,
        triggerType: input.triggerType.trim(),
        status: status as AutomationStatus,
      });
      await em.flush();
      return automation;
    },

    async listAutomations(orgId: string) {
      return orm.em.fork().find(Automation, { orgId }, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
    },
  };
}
