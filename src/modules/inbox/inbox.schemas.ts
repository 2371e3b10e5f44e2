import * as v from 'valibot';
import { ATTACHMENT_INGEST_STATUSES, INBOX_MESSAGE_KINDS, MESSAGE_DIRECTIONS } from '../../../db/entities/index.ts';
import { IdSchema, PageQuery, Timestamp } from '../../http/schemas.ts';
import { DATE_TIME_PATTERN, isDateTime } from '../broadcasts/broadcasts.fns.ts';

/** Who a `scope=mine` list is for; `team` is the whole workspace (the default). */
export const INBOX_SCOPES = ['mine', 'team'] as const;
export type InboxScope = (typeof INBOX_SCOPES)[number];

const Integer = v.pipe(v.number(), v.integer());
/** Prefix of the OpenAPI description of each field Herald adds to the spec's Inbox message. */
const EXTENSION = 'Herald extension (not in the spec):';

/** An RFC 3339 date-time query value (a real calendar date). */
export const DateTime = v.pipe(
  v.string(),
  v.regex(DATE_TIME_PATTERN, 'must be an RFC 3339 date-time, e.g. 2026-11-21T09:00:00Z'),
  // Only a well-formed value is checked against the calendar: one problem per field.
  v.check((value) => !DATE_TIME_PATTERN.test(value) || isDateTime(value), 'must be a real calendar date'),
);

/** Tags on an inbox thread or message (Herald's bounds, the pattern of send tags). */
export const INBOX_LIMITS = { tagsMax: 20, tagMax: 64 } as const;
const Tag = v.pipe(
  v.string(),
  v.regex(new RegExp(`^[A-Za-z0-9_.:-]{1,${INBOX_LIMITS.tagMax}}$`), `must be 1 to ${INBOX_LIMITS.tagMax} letters, digits or _ - . :`),
);
const TagList = v.pipe(v.array(Tag), v.maxLength(INBOX_LIMITS.tagsMax, `must hold at most ${INBOX_LIMITS.tagsMax} tags`));
const Flag = (what: string) => v.optional(v.pipe(v.picklist(['true', 'false'], 'must be true or false'), v.description(what)));

export const ListThreadsQuery = v.object({
  ...PageQuery.entries,
  archived: Flag('Only archived (true) or only not archived (false) threads.'),
  starred: Flag('Only starred (true) or only not starred (false) threads.'),
  unread: Flag('Only threads with (true) or without (false) unread messages.'),
  tag: v.optional(v.pipe(Tag, v.description('Only threads with this tag.'))),
});

export type ListThreadsInput = v.InferOutput<typeof ListThreadsQuery>;

/** Tag changes: `tags` replaces the set; `add_tags` / `remove_tags` change it without reading it first. */
const TagChanges = {
  tags: v.optional(v.pipe(TagList, v.description('Replaces the tags (not with add_tags or remove_tags).'))),
  add_tags: v.optional(v.pipe(TagList, v.description('Tags to add (kept once, in order).'))),
  remove_tags: v.optional(v.pipe(TagList, v.description('Tags to remove (applied after add_tags).'))),
};

/** PATCH /inbox/messages/{id}: every field optional; an empty body changes nothing. */
export const UpdateMessageBody = v.strictObject({
  read: v.optional(v.boolean()),
  starred: v.optional(v.boolean()),
  ...TagChanges,
});

/** PATCH /inbox/threads/{id}: `read` applies to every message of the thread (false: its latest message). */
export const UpdateThreadBody = v.strictObject({
  read: v.optional(
    v.pipe(v.boolean(), v.description('true marks every message of the thread read; false marks its latest message unread.')),
  ),
  starred: v.optional(v.boolean()),
  archived: v.optional(v.boolean()),
  ...TagChanges,
});

export type UpdateMessageInput = v.InferOutput<typeof UpdateMessageBody>;
export type UpdateThreadInput = v.InferOutput<typeof UpdateThreadBody>;

export const ListMessagesQuery = v.object({
  ...PageQuery.entries,
  thread_id: v.optional(IdSchema),
  updated_after: v.optional(
    v.pipe(
      DateTime,
      v.description('Messages whose updated_at is at or after this time (inclusive, so rows sharing the boundary time are never skipped).'),
    ),
  ),
  direction: v.optional(v.picklist(MESSAGE_DIRECTIONS, 'must be inbound or outbound')),
  scope: v.optional(
    v.pipe(
      v.picklist(INBOX_SCOPES, 'must be mine or team'),
      v.description(
        "team (default): the whole workspace. mine: conversations of the key's actor, i.e. threads where the actor " +
          "user's email address is a participant, or that hold an email sent with this key.",
      ),
    ),
    'team',
  ),
});

export type ListMessagesInput = v.InferOutput<typeof ListMessagesQuery>;

export const AttachmentParams = v.object({ id: IdSchema, attachmentId: IdSchema });

const Mailbox = v.object({ email: v.string(), name: v.string() });

export const InboxAttachmentResponse = v.object({
  id: v.string(),
  filename: v.string(),
  content_type: v.string(),
  size_bytes: Integer,
});

/** The spec's Inbox message (snake_case), plus Herald's extension fields. */
export const InboxMessageResponse = v.object({
  id: v.string(),
  thread_id: v.string(),
  direction: v.picklist(MESSAGE_DIRECTIONS),
  subject: v.string(),
  text: v.string(),
  from: v.pipe(v.nullable(Mailbox), v.description('null when the message had no readable From address.')),
  to: v.array(Mailbox),
  rfc_message_id: v.nullable(v.string()),
  in_reply_to_message_id: v.nullable(v.string()),
  references_rfc: v.array(v.string()),
  attachments: v.pipe(
    v.array(InboxAttachmentResponse),
    v.description('Stored attachments only, in MIME order; failed ones are in failed_attachments.'),
  ),
  attachment_ingest_status: v.picklist(ATTACHMENT_INGEST_STATUSES),
  failed_attachments: v.array(v.object({ filename: v.string(), reason: v.literal('ingest_failed') })),
  attachment_count: Integer,
  attachments_ready: v.boolean(),
  cc: v.pipe(v.array(Mailbox), v.description(`${EXTENSION} Cc recipients.`)),
  kind: v.pipe(
    v.picklist(INBOX_MESSAGE_KINDS),
    v.description(
      `${EXTENSION} what the message is: message, bounce (a DSN), delay (a delayed DSN), complaint (an ARF report) or auto_reply.`,
    ),
  ),
  auth_results: v.pipe(
    v.nullable(v.record(v.string(), v.unknown())),
    v.description(`${EXTENSION} SPF, DKIM and DMARC results of an inbound message (null for outbound ones).`),
  ),
  email_id: v.pipe(v.nullable(v.string()), v.description(`${EXTENSION} the transactional email an outbound message was sent as.`)),
  sent_at: v.pipe(v.nullable(Timestamp), v.description(`${EXTENSION} the Date header, when present and valid.`)),
  read: v.pipe(v.boolean(), v.description(`${EXTENSION} whether the message was marked read (outbound messages are read when written).`)),
  read_at: v.pipe(v.nullable(Timestamp), v.description(`${EXTENSION} when it was marked read.`)),
  starred: v.pipe(v.boolean(), v.description(`${EXTENSION} starred by PATCH /inbox/messages/{id}.`)),
  tags: v.pipe(v.array(v.string()), v.description(`${EXTENSION} the message's tags.`)),
  created_at: Timestamp,
  updated_at: Timestamp,
});

/** A message another one replies to, or a reply: enough to fetch and place it. */
const MessageReference = v.object({
  id: v.string(),
  thread_id: v.string(),
  direction: v.picklist(MESSAGE_DIRECTIONS),
  subject: v.string(),
  created_at: Timestamp,
});

/** GET /inbox/messages/{id}: the message with its HTML body and reply correlation. */
export const InboxMessageDetailResponse = v.object({
  ...InboxMessageResponse.entries,
  html: v.pipe(
    v.nullable(v.string()),
    v.description(`${EXTENSION} the HTML body, when the message had one (only on this operation, not in lists).`),
  ),
  in_reply_to: v.pipe(
    v.nullable(MessageReference),
    v.description('Reply correlation: the workspace message this one answers (matched by In-Reply-To), or null.'),
  ),
  replies: v.pipe(
    v.array(MessageReference),
    v.description('Reply correlation: messages of the workspace that answer this one, oldest first (at most 100).'),
  ),
});

/** Herald's inbox thread (the spec leaves its fields open). */
export const InboxThreadResponse = v.object({
  id: v.string(),
  subject: v.pipe(v.string(), v.description('Subject of the message that started the thread.')),
  participants: v.pipe(v.array(v.string()), v.description('Lower-cased addresses of everyone on any message of the thread.')),
  message_count: Integer,
  last_message_at: Timestamp,
  attachments_ready: v.pipe(v.boolean(), v.description('false while some message of the thread is still ingesting attachments.')),
  last_message: v.pipe(
    v.nullable(
      v.object({
        id: v.string(),
        direction: v.picklist(MESSAGE_DIRECTIONS),
        kind: v.picklist(INBOX_MESSAGE_KINDS),
        from: v.nullable(Mailbox),
        snippet: v.pipe(v.string(), v.description('The start of the text body on one line (at most 200 characters).')),
        created_at: Timestamp,
      }),
    ),
    v.description('The most recently recorded message of the thread.'),
  ),
  unread_count: v.pipe(Integer, v.description('Messages of the thread not marked read.')),
  starred: v.boolean(),
  archived: v.pipe(v.boolean(), v.description('Archived threads come back (archived false) when a message is received on them.')),
  tags: v.array(v.string()),
  created_at: Timestamp,
  updated_at: Timestamp,
});
