import * as v from 'valibot';
import { Timestamp } from '../../http/schemas.ts';
import type { FieldProblem } from '../../validation.ts';
import { EMAIL_EVENT_TYPES, EMAIL_STATUSES, RECIPIENT_KINDS, RECIPIENT_STATUSES } from '../../../db/entities/index.ts';
import { IdSchema, PageQuery } from '../../http/schemas.ts';
import { DateTime } from '../inbox/inbox.schemas.ts';
import { StreamName } from '../streams/streams.schemas.ts';
import { TrackingChoiceResponse, TrackingSettingSchema } from '../tracking/tracking.schemas.ts';

/** Bounds of a transactional send (spec: Transactional email send request, Limits). */
export const SEND_LIMITS = {
  fromMin: 3,
  fromMax: 320,
  recipientsPerField: 50,
  subjectMax: 998,
  htmlMax: 500_000,
  textMax: 200_000,
  headerValueMax: 4000,
  /** Herald's bound on custom headers per message (the spec bounds only their values). */
  headersMax: 50,
  attachmentsMax: 20,
  filenameMax: 512,
  contentTypeMax: 255,
  contentIdMax: 255,
  /** Template variables: names per send, and their JSON size (Herald's bounds). */
  variablesMax: 100,
  variablesBytesMax: 64 * 1024,
  /** Tags on a send (Herald's bounds). */
  tagsMax: 10,
  tagMax: 64,
  /** One attachment, decoded: 12 MB. */
  attachmentBytesMax: 12 * 1024 * 1024,
  /** Bodies plus decoded attachments: 25 MB. */
  messageBytesMax: 25 * 1024 * 1024,
} as const;

/**
 * The request-body limit of a send: a 25 MB message carried entirely as inline attachments,
 * base64 (4 bytes per 3) with MIME line breaks (an escaped CRLF, 4 bytes, per 76 characters),
 * plus 1 MiB for every other field (recipients, subject, headers, file names). About 36.1 MiB.
 */
export const SEND_REQUEST_BYTES_MAX = Math.ceil((Math.ceil(SEND_LIMITS.messageBytesMax / 3) * 4 * 80) / 76) + 1024 * 1024;

const NO_LINE_BREAKS = /^[^\r\n]*$/;
const Email = v.pipe(v.string(), v.trim(), v.maxLength(320, 'must be at most 320 characters'), v.email('must be a valid email address'));
const recipientList = (field: string) =>
  v.pipe(
    v.array(Email),
    v.maxLength(SEND_LIMITS.recipientsPerField, `${field} must list at most ${SEND_LIMITS.recipientsPerField} addresses`),
  );

const TAG = new RegExp(`^[A-Za-z0-9_.:-]{1,${SEND_LIMITS.tagMax}}$`);

/** RFC 5322 field name: printable ASCII except colon. */
const HEADER_NAME = /^[!-9;-~]{1,76}$/;

const AttachmentContentType = v.optional(
  v.pipe(v.string(), v.maxLength(SEND_LIMITS.contentTypeMax), v.regex(NO_LINE_BREAKS, 'must not contain line breaks')),
);
const AttachmentContentId = v.optional(
  v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(SEND_LIMITS.contentIdMax),
    v.regex(/^[^\s<>]+$/, 'must not contain spaces or angle brackets'),
  ),
);

const InlineAttachment = v.strictObject({
  filename: v.pipe(
    v.string(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(SEND_LIMITS.filenameMax),
    v.regex(NO_LINE_BREAKS, 'must not contain line breaks'),
  ),
  content: v.pipe(v.string(), v.minLength(1, 'must not be empty')),
  content_type: AttachmentContentType,
  content_id: AttachmentContentId,
});

const StoredAttachment = v.strictObject({
  attachment_id: v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(64)),
  filename: v.optional(
    v.pipe(v.string(), v.minLength(1), v.maxLength(SEND_LIMITS.filenameMax), v.regex(NO_LINE_BREAKS, 'must not contain line breaks')),
  ),
  content_type: AttachmentContentType,
  content_id: AttachmentContentId,
});

export const SendEmailBody = v.pipe(
  v.strictObject({
    from: v.pipe(
      v.string(),
      v.minLength(SEND_LIMITS.fromMin, `must be ${SEND_LIMITS.fromMin} to ${SEND_LIMITS.fromMax} characters`),
      v.maxLength(SEND_LIMITS.fromMax, `must be ${SEND_LIMITS.fromMin} to ${SEND_LIMITS.fromMax} characters`),
    ),
    to: v.union(
      [Email, v.pipe(recipientList('to'), v.minLength(1, 'must list at least one address'))],
      'must be an email address or an array of 1 to 50 addresses',
    ),
    cc: v.optional(recipientList('cc')),
    bcc: v.optional(recipientList('bcc')),
    // Required, unless template_id gives it (the template's subject).
    subject: v.optional(
      v.pipe(
        v.string(),
        v.minLength(1, 'must not be empty'),
        v.maxLength(SEND_LIMITS.subjectMax, `must be at most ${SEND_LIMITS.subjectMax} characters`),
        v.regex(NO_LINE_BREAKS, 'must not contain line breaks'),
      ),
    ),
    html: v.optional(v.pipe(v.string(), v.maxLength(SEND_LIMITS.htmlMax, `must be at most ${SEND_LIMITS.htmlMax} characters`))),
    text: v.optional(v.pipe(v.string(), v.maxLength(SEND_LIMITS.textMax, `must be at most ${SEND_LIMITS.textMax} characters`))),
    reply_to: v.optional(Email),
    headers: v.optional(
      v.pipe(
        v.record(
          v.pipe(v.string(), v.regex(HEADER_NAME, 'is not a valid header name')),
          v.pipe(
            v.string(),
            v.maxLength(SEND_LIMITS.headerValueMax, `must be at most ${SEND_LIMITS.headerValueMax} characters`),
            v.regex(NO_LINE_BREAKS, 'must not contain line breaks'),
          ),
        ),
        v.check((headers) => Object.keys(headers).length <= SEND_LIMITS.headersMax, `at most ${SEND_LIMITS.headersMax} headers`),
      ),
    ),
    attachments: v.optional(
      v.pipe(
        v.array(
          v.union([InlineAttachment, StoredAttachment], 'must be an inline attachment (filename, content) or a stored one (attachment_id)'),
        ),
        v.maxLength(SEND_LIMITS.attachmentsMax, `must hold at most ${SEND_LIMITS.attachmentsMax} attachments`),
      ),
    ),
    scheduled_at: v.optional(v.pipe(v.string(), v.minLength(1, 'must not be empty'), v.maxLength(200))),
    /** The message stream it belongs to (Herald extension): `transactional` when absent, `broadcast`, or a custom stream. */
    stream: v.optional(StreamName),
    /** Labels to find the email by (GET /outbox/emails?tag=), Herald extension. */
    tags: v.optional(
      v.pipe(
        v.array(v.pipe(v.string(), v.regex(TAG, `must be 1 to ${SEND_LIMITS.tagMax} letters, digits or _ - . :`))),
        v.maxLength(SEND_LIMITS.tagsMax, `must hold at most ${SEND_LIMITS.tagsMax} tags`),
      ),
    ),
    /** Open pixel and click tracking, off unless asked for (Herald extension). */
    tracking: v.optional(TrackingSettingSchema),
    /** A published template of the workspace (or shared with it): its subject and html, rendered with `variables` (Herald extension). */
    template_id: v.optional(v.pipe(v.string(), v.regex(/^[0-9a-f]{24}$/, 'must be a template id (24 hexadecimal characters)'))),
    variables: v.optional(
      v.pipe(
        v.record(v.pipe(v.string(), v.regex(/^[A-Za-z0-9_-]{1,100}$/, 'must be 1 to 100 letters, digits, _ or -')), v.unknown()),
        v.check((variables) => Object.keys(variables).length <= SEND_LIMITS.variablesMax, `at most ${SEND_LIMITS.variablesMax} variables`),
        v.check(
          (variables) => Buffer.byteLength(JSON.stringify(variables)) <= SEND_LIMITS.variablesBytesMax,
          `at most ${SEND_LIMITS.variablesBytesMax} bytes of JSON`,
        ),
      ),
    ),
  }),
  v.forward(
    v.partialCheck(
      [['html'], ['text'], ['template_id']],
      (input) => (input.html ?? '').length > 0 || (input.text ?? '').length > 0 || input.template_id !== undefined,
      'at least one of html or text is required (or template_id)',
    ),
    ['html'],
  ),
  v.forward(
    v.partialCheck(
      [['subject'], ['template_id']],
      (input) => input.subject !== undefined || input.template_id !== undefined,
      'is required (unless template_id gives it)',
    ),
    ['subject'],
  ),
  v.forward(
    v.partialCheck(
      [['html'], ['template_id']],
      (input) => input.html === undefined || input.template_id === undefined,
      'must not be given with template_id (the template is the html)',
    ),
    ['html'],
  ),
  v.forward(
    v.partialCheck(
      [['variables'], ['template_id']],
      (input) => input.variables === undefined || input.template_id !== undefined,
      'are only used with template_id',
    ),
    ['variables'],
  ),
);

export type SendEmailInput = v.InferOutput<typeof SendEmailBody>;
export type InlineAttachmentInput = v.InferOutput<typeof InlineAttachment>;
export type StoredAttachmentInput = v.InferOutput<typeof StoredAttachment>;

/** The spec's `details.reason` for a body that fails validation, most specific first. */
export function sendBodyErrorReason(fields: FieldProblem[]): string | undefined {
  const at = (prefix: string) => fields.filter((f) => f.path === prefix || f.path.startsWith(`${prefix}.`));
  if (at('from').length > 0) return 'INVALID_FROM';
  const to = at('to');
  const missingTo = (f: FieldProblem) =>
    f.path === 'to' && (f.type === 'min_length' || f.type === 'strict_object' || f.message.startsWith('must be an email address or'));
  if (to.some(missingTo)) {
    return 'NO_RECIPIENTS';
  }
  if (['to', 'cc', 'bcc'].some((field) => fields.some((f) => f.path === field && f.type === 'max_length'))) return 'TOO_MANY_RECIPIENTS';
  if (fields.some((f) => f.path === 'html' && f.type === 'partial_check' && f.message.startsWith('at least one of'))) return 'EMPTY_BODY';
  if (fields.some((f) => f.path === 'attachments' && f.type === 'max_length')) return 'TOO_MANY_ATTACHMENTS';
  if (at('attachments').length > 0) return 'INVALID_ATTACHMENT';
  return undefined;
}

const Recipient = v.object({
  email: v.string(),
  kind: v.picklist(RECIPIENT_KINDS),
  status: v.picklist(RECIPIENT_STATUSES),
  attempts: v.number(),
  last_response: v.nullable(v.string()),
  bounce_type: v.nullable(v.string()),
  next_attempt_at: v.nullable(Timestamp),
  updated_at: Timestamp,
});

const AttachmentSummary = v.object({
  filename: v.string(),
  content_type: v.nullable(v.string()),
  size_bytes: v.number(),
  content_id: v.nullable(v.string()),
  attachment_id: v.nullable(v.string()),
});

/** The transactional email record (spec names only _id and message_id; the rest is Herald's). */
export const TransactionalEmailResponse = v.object({
  _id: v.string(),
  message_id: v.string(),
  object: v.literal('email'),
  status: v.picklist(EMAIL_STATUSES),
  from: v.string(),
  subject: v.string(),
  reply_to: v.nullable(v.string()),
  scheduled_at: v.nullable(Timestamp),
  recipients: v.array(Recipient),
  template_id: v.nullable(v.string()),
  template_version: v.nullable(v.number()),
  tags: v.array(v.string()),
  /** The message stream it belongs to (Herald extension). */
  stream: v.string(),
  /** Whether its open pixel and tracked links were added (Herald extension). */
  tracking: TrackingChoiceResponse,
  /** GET /outbox/emails/{id} only: what happened to each recipient, oldest first. */
  events: v.optional(v.array(v.object({ type: v.picklist(EMAIL_EVENT_TYPES), recipient: v.string(), occurred_at: Timestamp }))),
  attachments: v.array(AttachmentSummary),
  credits_charged: v.number(),
  last_error: v.nullable(v.string()),
  created_at: Timestamp,
  updated_at: Timestamp,
  sent_at: v.nullable(Timestamp),
  cancelled_at: v.nullable(Timestamp),
});

/** GET /outbox/emails: the email log, newest first, with filters (all optional, combined with AND). */
export const ListEmailsQuery = v.object({
  ...PageQuery.entries,
  status: v.optional(v.picklist(EMAIL_STATUSES, `must be one of ${EMAIL_STATUSES.join(', ')}`)),
  to: v.optional(v.pipe(v.string(), v.trim(), v.toLowerCase(), v.maxLength(320), v.email('must be an email address'))),
  from: v.optional(
    v.pipe(
      v.string(),
      v.trim(),
      v.toLowerCase(),
      v.minLength(1),
      v.maxLength(320),
      v.description('A sender address (addr@host) or a sending domain.'),
    ),
  ),
  tag: v.optional(v.pipe(v.string(), v.regex(TAG, 'is not a tag'))),
  stream: v.optional(StreamName),
  template_id: v.optional(IdSchema),
  created_after: v.optional(v.pipe(DateTime, v.description('Emails created at or after this time.'))),
  created_before: v.optional(v.pipe(DateTime, v.description('Emails created before this time.'))),
});
export type ListEmailsFilters = v.InferOutput<typeof ListEmailsQuery>;

/** POST /outbox/emails/batch: the messages are checked one by one (batch.ts), so one bad message refuses only itself. */
export const BatchBody = v.strictObject({
  emails: v.pipe(
    v.array(v.unknown()),
    v.minLength(1, 'must hold at least one message'),
    v.maxLength(100, 'must hold at most 100 messages'),
    v.check(
      (emails) => emails.every((email) => typeof email === 'object' && email !== null && !Array.isArray(email)),
      'each message must be a JSON object',
    ),
  ),
});

const BatchError = v.object({ code: v.string(), message: v.string(), details: v.optional(v.record(v.string(), v.unknown())) });

export const BatchResponse = v.object({
  accepted: v.number(),
  refused: v.number(),
  results: v.array(
    v.object({
      index: v.number(),
      status: v.number(),
      email: v.optional(TransactionalEmailResponse),
      error: v.optional(BatchError),
    }),
  ),
});
