import * as v from 'valibot';
import { CONTACT_STATUSES } from '../../../db/entities/index.ts';
import { JsonObject, Timestamp } from '../../http/schemas.ts';

const Name = v.pipe(v.string(), v.maxLength(200));
const Tag = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(100));

export const ContactEmail = v.pipe(
  v.string(),
  v.trim(),
  v.maxLength(320),
  v.email('must be a valid email address'),
);

export const CreateContactBody = v.strictObject({
  email: ContactEmail,
  first_name: v.optional(Name),
  last_name: v.optional(Name),
  company: v.optional(Name),
  tags: v.optional(v.pipe(v.array(Tag), v.maxLength(100)), []),
  custom_fields: v.optional(JsonObject, {}),
});

export type CreateContactInput = v.InferOutput<typeof CreateContactBody>;

export const ContactResponse = v.object({
  _id: v.string(),
  email: v.pipe(v.string(), v.email()),
  firstName: v.string(),
  lastName: v.string(),
  company: v.string(),
  tags: v.array(v.string()),
  customFields: v.record(v.string(), v.unknown()),
  status: v.picklist(CONTACT_STATUSES),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
