import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn, orgIdColumn, updatedAtColumn } from './columns.ts';

/**
 * draft: created, editable · scheduled: launched for `scheduled_at` · sending: the audience is
 * being written to the domain's queue and drained · sent: every message settled · cancelled:
 * stopped by the caller (messages not yet handed off are not sent) · failed: stopped by Herald
 * (`failure_reason`; messages already queued still go).
 */
export const BROADCAST_STATUSES = ['draft', 'scheduled', 'sending', 'sent', 'cancelled', 'failed'] as const;
export type BroadcastStatus = (typeof BROADCAST_STATUSES)[number];

/** A broadcast to segments; created as a draft over the API, launched and cancelled with outbox.broadcasts:send. */
export const BroadcastSchema = defineEntity({
  name: 'Broadcast',
  tableName: 'broadcasts',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn(),
    name: p.string().length(200),
    subject: p.string().length(500),
    previewText: p.string().length(200).default(''),
    fromName: p.string().length(100),
    fromEmail: p.string().length(320),
    replyTo: p.string().length(320).nullable(),
    segmentIds: p.array().default([]),
    html: p.text().default(''),
    plainText: p.text().default(''),
    status: p.string().length(32).default('draft'),
    scheduledAt: p.datetime().nullable(),
    metrics: p.json<Record<string, number>>().defaultRaw(`'{}'`),
    /** The sending domain, fixed at launch. */
    domainId: p.string().length(24).nullable(),
    launchedAt: p.datetime().nullable(),
    /** When writing the audience began (the send time): contacts created after it are not included. */
    sendingAt: p.datetime().nullable(),
    /** The audience checkpoint: the last contact written, on the contacts' (created_at, id) order. */
    audienceAfterAt: p.datetime().nullable(),
    audienceAfterId: p.string().length(24).nullable(),
    /** Set once the whole audience is on the queue. */
    audienceWrittenAt: p.datetime().nullable(),
    /** Messages written to the queue (eligible contacts at their turn in the audience). */
    recipientCount: p.integer().default(0),
    completedAt: p.datetime().nullable(),
    cancelledAt: p.datetime().nullable(),
    failureReason: p.string().length(1024).nullable(),
    /** Launched with a test key: its messages go to the sandbox relay (src/modules/sandbox/). */
    sandbox: p.boolean().default(false),
    /** The open pixel in its messages (on unless the launch turned it off; copied to each message). */
    trackOpens: p.boolean().default(true),
    /** Tracked links in its messages (on unless the launch turned them off; copied to each message). */
    trackClicks: p.boolean().default(true),
    /** The message stream its messages belong to (Herald extension): `broadcast`, or a custom stream of the broadcast kind. */
    stream: p.string().length(64).default('broadcast'),
    createdAt: createdAtColumn(),
    updatedAt: updatedAtColumn(),
  },
});

export class Broadcast extends BroadcastSchema.class {}
BroadcastSchema.setClass(Broadcast);
