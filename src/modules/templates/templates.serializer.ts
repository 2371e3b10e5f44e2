import type { Template } from '../../../db/entities/index.ts';

/** The spec's Template (snake_case). */
export function serializeTemplate(template: Template) {
  return {
    _id: template.id,
    name: template.name,
    description: template.description,
    subject: template.subject,
    preview_text: template.previewText,
    html: template.html,
    category: template.category,
    tags: template.tags,
    folder_id: template.folderId ?? null,
    status: template.status,
    version: template.version,
    created_at: template.createdAt.toISOString(),
    updated_at: template.updatedAt.toISOString(),
  };
}

/** The delete envelope's data: `hidden` tells a grantee's hide from the owner's removal. */
export function serializeTemplateDeletion(result: { id: string; hidden: boolean }) {
  return { _id: result.id, deleted: true as const, hidden: result.hidden };
}
