import Mustache from 'mustache';
import type { Template } from '../../../db/entities/index.ts';
import type { UpdateTemplateInput } from './templates.schemas.ts';

type EditableField = 'name' | 'description' | 'subject' | 'previewText' | 'html' | 'category' | 'folderId' | 'tags' | 'status';
export type TemplateChanges = Partial<Pick<Template, EditableField>>;

/** Tags as stored: trimmed by the schema, duplicates dropped, first occurrence kept. */
export function normalizeTags(tags: readonly string[]): string[] {
  return [...new Set(tags)];
}

function sameTags(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((tag, i) => tag === b[i]);
}

/**
 * The fields of an update request that differ from the template's current values, in entity
 * names. Empty when the request changes nothing, so a no-op PATCH does not create a version.
 */
export function templateChanges(template: Template, input: UpdateTemplateInput): TemplateChanges {
  const requested: TemplateChanges = {
    ...(input.name !== undefined ? { name: input.name } : {}),
    ...(input.description !== undefined ? { description: input.description } : {}),
    ...(input.subject !== undefined ? { subject: input.subject } : {}),
    ...(input.preview_text !== undefined ? { previewText: input.preview_text } : {}),
    ...(input.html !== undefined ? { html: input.html } : {}),
    ...(input.category !== undefined ? { category: input.category } : {}),
    ...(input.folder_id !== undefined ? { folderId: input.folder_id } : {}),
    ...(input.tags !== undefined ? { tags: normalizeTags(input.tags) } : {}),
    ...(input.status !== undefined ? { status: input.status } : {}),
  };
  const changes: TemplateChanges = {};
  for (const [field, value] of Object.entries(requested) as [EditableField, unknown][]) {
    const current = template[field];
    const same = Array.isArray(value) && Array.isArray(current) ? sameTags(value, current) : value === current;
    if (!same) (changes as Record<EditableField, unknown>)[field] = value;
  }
  return changes;
}

type MustacheToken = [type: string, value: string, start: number, end: number, children?: MustacheToken[]];

/**
 * Every variable name a template's parts use, in order of first use: plain and unescaped
 * variables, and the names of sections and inverted sections (`{{#name}}`, `{{^name}}`), with
 * whether each is only used as a section (optional then). Throws Mustache's error on bad syntax.
 */
export function templateVariableNames(parts: readonly string[]): { name: string; optional: boolean }[] {
  const seen = new Map<string, boolean>();
  const walk = (tokens: readonly MustacheToken[], inSection: boolean) => {
    for (const [type, value, , , children] of tokens) {
      if (type === 'name' || type === '&') seen.set(value, (seen.get(value) ?? true) && inSection);
      if (type === '#' || type === '^') {
        if (!seen.has(value)) seen.set(value, true);
        walk(children ?? [], true);
      }
    }
  };
  for (const part of parts) walk(Mustache.parse(part) as unknown as MustacheToken[], false);
  return [...seen].filter(([name]) => name !== '.').map(([name, optional]) => ({ name, optional }));
}
