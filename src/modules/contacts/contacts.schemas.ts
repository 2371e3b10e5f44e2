import * as v from 'valibot';
import { IdSchema } from '../../http/schemas.ts';
import { CONTACT_STATUSES } from '../../../db/entities/index.ts';
import { JsonObject, PageQuery, Timestamp } from '../../http/schemas.ts';

const Name = v.pipe(v.string(), v.maxLength(200));
const Tag = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(100));
const Tags = v.pipe(v.array(Tag), v.maxLength(100));
const Status = v.picklist(CONTACT_STATUSES, `must be one of ${CONTACT_STATUSES.join(', ')}`);

export const ContactEmail = v.pipe(v.string(), v.trim(), v.maxLength(320), v.email('must be a valid email address'));

export const CreateContactBody = v.strictObject({
  email: ContactEmail,
  first_name: v.optional(Name),
  last_name: v.optional(Name),
  company: v.optional(Name),
  tags: v.optional(Tags, []),
  custom_fields: v.optional(JsonObject, {}),
});

export type CreateContactInput = v.InferOutput<typeof CreateContactBody>;

export const UpdateContactBody = v.strictObject({
  email: v.optional(ContactEmail),
  first_name: v.optional(Name),
  last_name: v.optional(Name),
  company: v.optional(Name),
  tags: v.optional(Tags),
  custom_fields: v.optional(JsonObject),
  status: v.optional(Status),
});

export type UpdateContactInput = v.InferOutput<typeof UpdateContactBody>;

/** Herald's list filters (documented extensions): exact email, status, a prefix search, a tag. */
export const ListContactsQuery = v.object({
  ...PageQuery.entries,
  email: v.optional(v.pipe(v.string(), v.trim(), v.maxLength(320))),
  status: v.optional(Status),
  search: v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.minLength(1, 'must not be empty'),
      v.maxLength(320, 'must be at most 320 characters'),
      v.description('Contacts whose email, full name ("first last") or last name starts with this text, any case.'),
    ),
  ),
  tag: v.optional(v.pipe(Tag, v.description('Contacts carrying this tag (exact, case included).'))),
});

/** The CSV downloads' choice of raw values (Herald extension): `escape_formulas=false`. */
export const CsvDownloadQuery = v.object({
  escape_formulas: v.optional(
    v.pipe(
      v.picklist(['true', 'false'], 'must be true or false'),
      v.description(
        "Cells starting with = + - @, a tab or a carriage return are written with a leading ' so a spreadsheet shows them as text (true, the default); false writes every value exactly as stored.",
      ),
    ),
  ),
});

/** The CsvOptions of a CSV download's query: formulas escaped unless `escape_formulas=false`. */
export const csvOptionsOf = (query: { escape_formulas?: 'true' | 'false' | undefined }) => ({
  escapeFormulas: query.escape_formulas !== 'false',
});

/** GET /contacts/export (Herald extension). */
export const ExportContactsQuery = v.object({
  segment_id: v.optional(v.pipe(IdSchema, v.description('Only the members of this segment.'))),
  status: v.optional(Status),
  ...CsvDownloadQuery.entries,
});

export const ContactResponse = v.object({
  _id: v.string(),
  email: v.pipe(v.string(), v.email()),
  firstName: v.string(),
  lastName: v.string(),
  company: v.string(),
  tags: v.array(v.string()),
  customFields: v.record(v.string(), v.unknown()),
  status: Status,
  createdAt: Timestamp,
  updatedAt: Timestamp,
});

export const DeletedContactResponse = v.object({ _id: v.string(), deleted: v.literal(true) });
