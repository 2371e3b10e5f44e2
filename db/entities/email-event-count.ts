import { defineEntity, p } from '@mikro-orm/core';
import { EMAIL_EVENT_TYPES } from './email-event.ts';

/**
 * Daily rollup of email_events: how many events of one type one workspace had on one UTC day,
 * per broadcast ('' for transactional email) and sending domain. recordEmailEvent keeps it in
 * step with email_events in the same transaction; GET /metrics reads only this table.
 */
export const EmailEventCountSchema = defineEntity({
  name: 'EmailEventCount',
  tableName: 'email_event_counts',
  properties: {
    orgId: p.string().length(24).primary(),
    /** The UTC day of the events' occurredAt, `YYYY-MM-DD`. */
    day: p.date().primary(),
    /** The broadcast of the events; '' for transactional email (a primary key has no nulls). */
    broadcastId: p.string().length(24).default('').primary(),
    domain: p.string().length(253).primary(),
    type: p.enum(EMAIL_EVENT_TYPES).primary(),
    count: p.bigint('number'),
  },
});

export class EmailEventCount extends EmailEventCountSchema.class {}
EmailEventCountSchema.setClass(EmailEventCount);
