import type { MikroORM } from '@mikro-orm/postgresql';
import { Organization, Template, TemplateShare } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';

/** Operators share a template from its owner workspace with another workspace. */
export function createTemplatesAdmin({ orm }: { orm: MikroORM }) {
  return {
    /** Idempotent: sharing again un-hides a share the grantee had hidden. */
    async shareTemplate(input: { templateId: string; orgId: string }) {
      return orm.em.fork().transactional(async (em) => {
        const template = await em.findOne(Template, { id: input.templateId }, ALL_TENANTS);
        if (!template) throw new AppError('not_found', `template ${input.templateId} does not exist`);
        if (!(await em.findOne(Organization, { id: input.orgId }))) {
          throw new AppError('not_found', `workspace ${input.orgId} does not exist`);
        }
        if (template.orgId === input.orgId) {
          throw new AppError('invalid_request', 'a template cannot be shared with its own workspace');
        }
        const existing = await em.findOne(TemplateShare, { templateId: template.id, orgId: input.orgId }, ALL_TENANTS);
        if (existing) {
          existing.hiddenAt = null;
          return existing;
        }
        return em.create(TemplateShare, { templateId: template.id, orgId: input.orgId });
      });
    },

    async listShares(templateId: string) {
      return orm.em.fork().find(TemplateShare, { templateId }, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
    },
  };
}
