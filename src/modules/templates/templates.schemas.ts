import * as v from 'valibot';
import { TEMPLATE_CATEGORIES, TEMPLATE_STATUSES } from '../../../db/entities/index.ts';
import { Timestamp } from '../../http/schemas.ts';

/**
 * Bounds: the spec's (name 1..200, description ≤ 500, subject ≤ 500, preview_text ≤ 200) plus
 * Herald's where the spec gives none: html ≤ 500,000 characters (the transactional html limit),
 * folder_id 1..64 characters, at most 100 tags of 1..100 characters each (as for contacts).
 */
export const TEMPLATE_LIMITS = {
  name: 200,
  description: 500,
  subject: 500,
  previewText: 200,
  html: 500_000,
  folderId: 64,
  tags: 100,
  tag: 100,
} as const;

// NUL characters are refused for every route before validation (src/http/mount-routes.ts).
const text = (max: number) => v.pipe(v.string(), v.maxLength(max));

const Name = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(TEMPLATE_LIMITS.name));

/** A subject becomes a header line when the template is sent: no line breaks. */
const Subject = v.pipe(
  text(TEMPLATE_LIMITS.subject),
  v.check((value) => !/[\r\n]/.test(value), 'must be a single line'),
);

const FolderId = v.nullable(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(TEMPLATE_LIMITS.folderId)));

const Tag = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(TEMPLATE_LIMITS.tag));
const Tags = v.pipe(v.array(Tag), v.maxLength(TEMPLATE_LIMITS.tags));

const Category = v.picklist(TEMPLATE_CATEGORIES, `must be one of ${TEMPLATE_CATEGORIES.join(', ')}`);
const Status = v.picklist(TEMPLATE_STATUSES, `must be one of ${TEMPLATE_STATUSES.join(', ')}`);

export const CreateTemplateBody = v.strictObject({
  name: Name,
  description: v.optional(text(TEMPLATE_LIMITS.description), ''),
  subject: v.optional(Subject, ''),
  preview_text: v.optional(text(TEMPLATE_LIMITS.previewText), ''),
  html: v.optional(text(TEMPLATE_LIMITS.html), ''),
  category: v.optional(Category, 'other'),
  folder_id: v.optional(FolderId, null),
  tags: v.optional(Tags, []),
});

export type CreateTemplateInput = v.InferOutput<typeof CreateTemplateBody>;

/** Every field optional; `folder_id: null` clears the folder. */
export const UpdateTemplateBody = v.strictObject({
  name: v.optional(Name),
  description: v.optional(text(TEMPLATE_LIMITS.description)),
  subject: v.optional(Subject),
  preview_text: v.optional(text(TEMPLATE_LIMITS.previewText)),
  html: v.optional(text(TEMPLATE_LIMITS.html)),
  category: v.optional(Category),
  folder_id: v.optional(FolderId),
  tags: v.optional(Tags),
  status: v.optional(Status),
});

export type UpdateTemplateInput = v.InferOutput<typeof UpdateTemplateBody>;

export const TemplateResponse = v.object({
  _id: v.string(),
  name: v.string(),
  description: v.string(),
  subject: v.string(),
  preview_text: v.string(),
  html: v.string(),
  category: v.picklist(TEMPLATE_CATEGORIES),
  tags: v.array(v.string()),
  folder_id: v.nullable(v.string()),
  status: v.picklist(TEMPLATE_STATUSES),
  version: v.pipe(v.number(), v.integer()),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** `hidden`: true when the caller's delete only hid a template shared with it (the owner keeps it). */
export const TemplateDeleteResponse = v.object({
  _id: v.string(),
  deleted: v.literal(true),
  hidden: v.boolean(),
});
