import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/** What a stream carries: mail a recipient asked for (receipts, resets) or mail sent to many (newsletters). */
export const STREAM_KINDS = ['transactional', 'broadcast'] as const;
export type StreamKind = (typeof STREAM_KINDS)[number];

/** The two streams every workspace has without creating them. */
export const BUILT_IN_STREAMS = { transactional: 'transactional', broadcast: 'broadcast' } as const;

/**
 * A message stream of a workspace (Herald extension). The built-in `transactional` and
 * `broadcast` streams exist without a row; a row for one of them holds only its settings (its
 * daily budget). A custom stream has a name and a kind; emails name their stream, suppressions
 * may be scoped to one, webhook endpoints may subscribe to chosen ones.
 */
export const MessageStreamSchema = defineEntity({
  name: 'MessageStream',
  tableName: 'message_streams',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    name: p.string().length(64),
    kind: p.enum(STREAM_KINDS),
    description: p.string().length(500).default(''),
    /** At most this many recipients accepted per UTC day (null: no budget). */
    dailyCap: p.integer().nullable(),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
  uniques: [{ properties: ['orgId', 'name'] }],
});

export class MessageStream extends MessageStreamSchema.class {}
MessageStreamSchema.setClass(MessageStream);

/** How many recipients a stream accepted on one UTC day, against its daily budget. */
export const StreamDailySendSchema = defineEntity({
  name: 'StreamDailySend',
  tableName: 'stream_daily_sends',
  properties: {
    orgId: p.string().length(24).primary(),
    stream: p.string().length(64).primary(),
    day: p.string().length(10).primary(),
    count: p.integer().default(0),
  },
});

export class StreamDailySend extends StreamDailySendSchema.class {}
StreamDailySendSchema.setClass(StreamDailySend);
