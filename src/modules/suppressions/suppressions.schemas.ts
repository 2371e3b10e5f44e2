import * as v from 'valibot';
import { PageQuery, Timestamp } from '../../http/schemas.ts';
import { StreamName } from '../streams/streams.schemas.ts';

/** Why an address is on the list, as the API names it (a hard bounce is `bounce`). */
export const SUPPRESSION_API_REASONS = ['bounce', 'complaint', 'unsubscribe', 'manual'] as const;
export type SuppressionApiReason = (typeof SUPPRESSION_API_REASONS)[number];

const Address = v.pipe(
  v.string(),
  v.trim(),
  v.toLowerCase(),
  v.maxLength(320, 'must be at most 320 characters'),
  v.email('must be an email address'),
);

export const ListSuppressionsQuery = v.object({
  ...PageQuery.entries,
  reason: v.optional(v.picklist(SUPPRESSION_API_REASONS, `must be one of ${SUPPRESSION_API_REASONS.join(', ')}`)),
  email: v.optional(Address),
  /** Entries scoped to this stream (Herald extension); `all` for the entries that hold for every stream. */
  stream: v.optional(v.union([v.literal('all'), StreamName], 'must be all or a stream name')),
});

export const AddSuppressionBody = v.strictObject({
  email: Address,
  /** Why the caller suppresses it (kept on the entry and in the audit trail). */
  detail: v.optional(v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters'))),
  /** Keep mail of this stream only from the address (Herald extension); absent or null: every stream. */
  stream: v.optional(v.nullable(StreamName)),
});
export type AddSuppressionInput = v.InferOutput<typeof AddSuppressionBody>;

export const SuppressionParams = v.object({ email: Address });

/** DELETE /suppressions/{email}: which entry to lift (Herald extension); absent: every entry of the address. */
export const RemoveSuppressionQuery = v.object({
  stream: v.optional(v.union([v.literal('all'), StreamName], 'must be all or a stream name')),
});

export const SuppressionResponse = v.object({
  email: v.string(),
  reason: v.picklist(SUPPRESSION_API_REASONS),
  email_id: v.nullable(v.string()),
  detail: v.nullable(v.string()),
  /** The stream it keeps mail from; null: every stream (Herald extension). */
  stream: v.nullable(v.string()),
  created_at: Timestamp,
});

export const RemovedSuppressionResponse = v.object({
  email: v.string(),
  deleted: v.literal(true),
  /** Whether the workspace's contact with this address was moved back to active (it was bounced, complained or suppressed). */
  contact_reactivated: v.boolean(),
});

export const SuppressionChangeResponse = v.object({
  _id: v.string(),
  email: v.string(),
  action: v.picklist(['added', 'removed']),
  reason: v.picklist(SUPPRESSION_API_REASONS),
  api_key_id: v.nullable(v.string()),
  email_id: v.nullable(v.string()),
  detail: v.nullable(v.string()),
  stream: v.nullable(v.string()),
  created_at: Timestamp,
});
