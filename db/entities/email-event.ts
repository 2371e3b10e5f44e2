import { defineEntity, p } from '@mikro-orm/core';
import { createdAtColumn, idColumn } from './columns.ts';

export const EMAIL_EVENT_TYPES = [
  'sent',
  'delivered',
  'deferred',
  'failed',
  'opened',
  'clicked',
  'bounced',
  'complained',
  'unsubscribed',
] as const;
export type EmailEventType = (typeof EMAIL_EVENT_TYPES)[number];

/**
 * One engagement or delivery fact about one recipient of one email. The send pipeline records
 * them through recordEmailEvent(s), which also maintains the daily rollup GET /metrics reads
 * (email_event_counts); `broadcastId` ties them to a campaign.
 */
export const EmailEventSchema = defineEntity({
  name: 'EmailEvent',
  tableName: 'email_events',
  properties: {
    id: idColumn(),
    orgId: p.string().length(24),
    type: p.enum(EMAIL_EVENT_TYPES),
    emailId: p.string().length(24).nullable(),
    broadcastId: p.string().length(24).nullable(),
    recipient: p.string().length(320),
    domain: p.string().length(253),
    occurredAt: p.datetime(),
    createdAt: createdAtColumn(),
  },
  indexes: [
    { properties: ['orgId', 'occurredAt', 'type'] },
    // A broadcast's events (a transactional send's have no broadcast: not indexed here).
    { properties: ['orgId', 'broadcastId', 'type'], where: { broadcastId: { $ne: null } } },
    // One email's events (GET /outbox/emails/{id}).
    { properties: ['orgId', 'emailId'] },
  ],
});

export class EmailEvent extends EmailEventSchema.class {}
EmailEventSchema.setClass(EmailEvent);
