import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

export const TEMPLATE_STATUSES = ['draft', 'published', 'archived'] as const;
export type TemplateStatus = (typeof TEMPLATE_STATUSES)[number];
export const TEMPLATE_CATEGORIES = ['marketing', 'transactional', 'newsletter', 'welcome', 'other'] as const;
export type TemplateCategory = (typeof TEMPLATE_CATEGORIES)[number];

/** An email template owned by one workspace (`orgId`), possibly shared with others. */
export const TemplateSchema = defineEntity({
  name: 'Template',
  tableName: 'templates',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(200),
    description: p.string().length(500).default(''),
    subject: p.string().length(500).default(''),
    previewText: p.string().length(200).default(''),
    html: p.text().default(''),
    category: p.enum(TEMPLATE_CATEGORIES).default('other'),
    tags: p.array().default([]),
    folderId: p.string().length(64).nullable(),
    status: p.enum(TEMPLATE_STATUSES).default('draft'),
    version: p.integer().default(1),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Template extends TemplateSchema.class {}
TemplateSchema.setClass(Template);

/**
 * A template shared by its owner with another workspace (`orgId` is the grantee).
 * `hiddenAt` marks the grantee's own delete: hidden for that workspace only.
 */
export const TemplateShareSchema = defineEntity({
  name: 'TemplateShare',
  tableName: 'template_shares',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    templateId: p.string().length(24).index(),
    hiddenAt: p.datetime().nullable(),
    createdAt: createdAtColumn(),
  },
  uniques: [{ properties: ['templateId', 'orgId'] }],
});

export class TemplateShare extends TemplateShareSchema.class {}
TemplateShareSchema.setClass(TemplateShare);
