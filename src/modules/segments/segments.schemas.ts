import * as v from 'valibot';
import { IdSchema, Timestamp } from '../../http/schemas.ts';
import { MEMBERSHIP_LIMITS, SEGMENT_TYPES } from './segments.fns.ts';

/** A tag as contacts carry them (same bounds as contact tags): trimmed, 1 to 100 characters. */
const Tag = v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(100));

/**
 * POST /segments. `type` follows from `tags` (see segments.fns.ts), except `static` (Herald
 * extension): a segment whose members are added and removed through the API, without tags.
 */
export const CreateSegmentBody = v.strictObject({
  name: v.pipe(v.string(), v.trim(), v.minLength(1, 'must not be empty'), v.maxLength(120)),
  description: v.optional(v.pipe(v.string(), v.maxLength(500)), ''),
  tags: v.optional(v.pipe(v.array(Tag), v.maxLength(100)), []),
  type: v.optional(
    v.pipe(
      v.literal('static', 'must be static (tag and all follow from tags)'),
      v.description('Herald extension: static for a segment whose members are managed with /segments/{id}/contacts (no tags).'),
    ),
  ),
});

/** POST /segments/{id}/contacts and /segments/{id}/contacts/remove: contacts by id and/or email. */
export const MembershipBody = v.pipe(
  v.strictObject({
    contact_ids: v.optional(
      v.pipe(v.array(IdSchema), v.maxLength(MEMBERSHIP_LIMITS.perRequest, `must hold at most ${MEMBERSHIP_LIMITS.perRequest} ids`)),
      [],
    ),
    emails: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.trim(), v.maxLength(320), v.email('must be a valid email address'))),
        v.maxLength(MEMBERSHIP_LIMITS.perRequest, `must hold at most ${MEMBERSHIP_LIMITS.perRequest} addresses`),
      ),
      [],
    ),
  }),
  v.forward(
    v.partialCheck(
      [['contact_ids'], ['emails']],
      (body) =>
        body.contact_ids.length + body.emails.length >= 1 && body.contact_ids.length + body.emails.length <= MEMBERSHIP_LIMITS.perRequest,
      `name 1 to ${MEMBERSHIP_LIMITS.perRequest} contacts in all (contact_ids and emails together)`,
    ),
    ['contact_ids'],
  ),
);

export type MembershipInput = v.InferOutput<typeof MembershipBody>;

const Count = v.pipe(v.number(), v.integer());
const NotFound = v.object({
  contactIds: v.pipe(v.array(v.string()), v.description('Ids that name no contact of the workspace.')),
  emails: v.pipe(v.array(v.string()), v.description('Addresses of no contact of the workspace (normalised).')),
});

/** The answer of POST /segments/{id}/contacts (camelCase, as segments are). */
export const AddMembersResponse = v.object({
  segmentId: v.string(),
  added: Count,
  alreadyMembers: Count,
  notFound: NotFound,
  contactCount: Count,
});

/** The answer of POST /segments/{id}/contacts/remove. */
export const RemoveMembersResponse = v.object({
  segmentId: v.string(),
  removed: Count,
  notMembers: Count,
  notFound: NotFound,
  contactCount: Count,
});

export type CreateSegmentInput = v.InferOutput<typeof CreateSegmentBody>;

/** The spec's Segment (camelCase). */
export const SegmentResponse = v.object({
  _id: v.string(),
  name: v.string(),
  description: v.string(),
  type: v.picklist(SEGMENT_TYPES),
  tags: v.array(v.string()),
  contactCount: v.pipe(v.number(), v.integer(), v.minValue(0)),
  createdAt: Timestamp,
  updatedAt: Timestamp,
});
