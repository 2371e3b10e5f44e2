/**
 * Templates of one workspace, plus the templates other workspaces shared with it (operators
 * share them: templates.admin.ts). A workspace sees the templates it owns and those shared
 * with it that it has not hidden; it may change and delete only its own. A grantee's DELETE
 * hides the shared template for that grantee alone; the owner's DELETE removes the template
 * and every share of it. Every update that alters a field increases `version` by one; an
 * update that changes nothing leaves the row, its version and updated_at as they were.
 */
import { LockMode } from '@mikro-orm/core';
import type { FilterQuery, MikroORM } from '@mikro-orm/postgresql';
import { Template, TemplateShare } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { ALL_TENANTS, scopeToOrg, type EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { normalizeTags, templateChanges } from './templates.fns.ts';
import type { CreateTemplateInput, UpdateTemplateInput } from './templates.schemas.ts';

const notFound = (id: string) => new AppError('not_found', `Template ${id} does not exist.`);

const sharedReadOnly = (id: string) =>
  new AppError('forbidden', `Template ${id} is shared with this workspace by its owner and cannot be changed here.`, {
    reason: 'TEMPLATE_SHARED_READ_ONLY',
  });

/*
 * Cross-tenant access, all of it in this section. A shared template's row belongs to its
 * owner's workspace, so a grantee's reads must switch the tenant filter off (ALL_TENANTS);
 * `visibleTo` is then what confines them: the workspace's own rows, or rows whose id is in a
 * share granted to the workspace that it has not hidden. The list and GET use this one
 * condition, so what a workspace can list is exactly what it can read.
 */

/** Templates `orgId` owns, or that are shared with it and not hidden by it. */
function visibleTo(em: EntityManager, orgId: string): FilterQuery<Template> {
  const shared = em.createQueryBuilder(TemplateShare, 'share').select('share.templateId').where({ orgId, hiddenAt: null });
  return { $or: [{ orgId }, { id: { $in: shared } }] };
}

async function findVisibleTemplate(em: EntityManager, orgId: string, id: string): Promise<Template | null> {
  return em.findOne(Template, { $and: [{ id }, visibleTo(em, orgId)] }, ALL_TENANTS);
}

async function findVisiblePage(
  em: EntityManager,
  orgId: string,
  page: { limit: number; after?: KeysetPosition | undefined },
  folderId?: string,
) {
  const where: FilterQuery<Template> = folderId === undefined ? visibleTo(em, orgId) : { $and: [visibleTo(em, orgId), { folderId }] };
  return findKeysetPage(em, Template, where, page, { filters: ALL_TENANTS.filters });
}

/**
 * The folder labels of the templates `orgId` sees, by name (at most `limit`), read from the
 * newest 5,000 of them: a workspace's templates number in the hundreds.
 */
async function findVisibleFolders(em: EntityManager, orgId: string, limit: number): Promise<string[]> {
  const rows = await em.find(
    Template,
    { $and: [visibleTo(em, orgId), { folderId: { $ne: null } }] },
    { fields: ['folderId'], orderBy: { createdAt: 'desc' }, limit: 5_000, ...ALL_TENANTS },
  );
  return [...new Set(rows.flatMap((row) => (row.folderId ? [row.folderId] : [])))].sort().slice(0, limit);
}

/** Only for the owner's delete of `template` (already checked to be the caller's): its grantees' shares go with it. */
async function deleteSharesOf(em: EntityManager, template: Template): Promise<void> {
  await em.nativeDelete(TemplateShare, { templateId: template.id }, ALL_TENANTS);
}

/* End of cross-tenant access. */

/** Templates as one workspace sees them; every query runs through a workspace-scoped EntityManager. */
export function createTemplatesService({ orm }: { orm: MikroORM }) {
  return {
    /** Own and shared (not hidden) templates in one keyset scan, newest first on (createdAt, id); optionally of one folder. */
    async listTemplates(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }, filters: { folderId?: string } = {}) {
      return findVisiblePage(scopeToOrg(orm.em, orgId), orgId, page, filters.folderId);
    },

    /** The folder labels (`folder_id`) of the templates the workspace sees, by name: the dashboard's folder filter. */
    async listFolders(orgId: string): Promise<string[]> {
      return findVisibleFolders(scopeToOrg(orm.em, orgId), orgId, 200);
    },

    /** An own template, or one shared with the workspace and not hidden; otherwise 404. */
    async getTemplate(orgId: string, id: string): Promise<Template> {
      const template = await findVisibleTemplate(scopeToOrg(orm.em, orgId), orgId, id);
      if (!template) throw notFound(id);
      return template;
    },

    /** Creates a draft at version 1. */
    async createTemplate(orgId: string, input: CreateTemplateInput): Promise<Template> {
      const em = scopeToOrg(orm.em, orgId);
      const template = em.create(Template, {
        orgId,
        name: input.name,
        description: input.description,
        subject: input.subject,
        previewText: input.preview_text,
        html: input.html,
        category: input.category,
        folderId: input.folder_id,
        tags: normalizeTags(input.tags),
        status: 'draft',
        version: 1,
      });
      await em.flush();
      return template;
    },

    /**
     * Applies the given fields under a row lock; `version` goes up by one when any of them
     * differs. A template shared with the workspace is 403 `forbidden` (reason
     * TEMPLATE_SHARED_READ_ONLY): its owner controls it.
     */
    async updateTemplate(orgId: string, id: string, input: UpdateTemplateInput): Promise<Template> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const template = await em.findOne(Template, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!template) throw (await findVisibleTemplate(em, orgId, id)) ? sharedReadOnly(id) : notFound(id);
        const changes = templateChanges(template, input);
        if (Object.keys(changes).length > 0) {
          em.assign(template, changes);
          template.version += 1;
        }
        return template;
      });
    },

    /**
     * The owner's delete removes the template and its shares (`hidden: false`); a grantee's
     * delete hides the shared template for the grantee only (`hidden: true`), until an
     * operator shares it again.
     */
    async deleteTemplate(orgId: string, id: string): Promise<{ id: string; hidden: boolean }> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const template = await findVisibleTemplate(em, orgId, id);
        if (!template) throw notFound(id);
        if (template.orgId === orgId) {
          await deleteSharesOf(em, template);
          em.remove(template);
          return { id, hidden: false };
        }
        const share = await em.findOne(TemplateShare, { templateId: id, hiddenAt: null });
        if (!share) throw notFound(id);
        share.hiddenAt = new Date();
        return { id, hidden: true };
      });
    },
  };
}

export type TemplatesService = ReturnType<typeof createTemplatesService>;
