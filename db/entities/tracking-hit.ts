import { defineEntity, p } from '@mikro-orm/core';
import { idColumn, orgIdColumn } from './columns.ts';

export const TRACKING_HIT_KINDS = ['open', 'click'] as const;
export type TrackingHitKind = (typeof TRACKING_HIT_KINDS)[number];

/**
 * pending: not judged yet (a hit is judged once it is a second old, so a burst is seen whole) ·
 * counted: the recipient's first open or click (an `opened` / `clicked` email event) ·
 * repeat: a later one of the same recipient · flagged: part of a burst (a scanner or prefetcher
 * that fetched several links of the message within a second), not counted.
 */
export const TRACKING_HIT_STATES = ['pending', 'counted', 'repeat', 'flagged'] as const;
export type TrackingHitState = (typeof TRACKING_HIT_STATES)[number];

/** One fetch of a tracked email's open pixel or of one of its tracked links. */
export const TrackingHitSchema = defineEntity({
  name: 'TrackingHit',
  tableName: 'tracking_hits',
  properties: {
    id: idColumn(),
    orgId: orgIdColumn({ indexed: false }),
    emailId: p.string().length(24),
    /** Null for an email of no broadcast (transactional, automation). */
    broadcastId: p.string().length(24).nullable(),
    kind: p.enum(TRACKING_HIT_KINDS),
    /** The link's target (clicks). */
    url: p.string().length(2048).nullable(),
    userAgent: p.string().length(512).nullable(),
    state: p.enum(TRACKING_HIT_STATES).default('pending'),
    at: p.datetime(),
  },
  indexes: [
    { properties: ['emailId', 'at'] },
    { name: 'tracking_hits_pending_index', properties: ['at', 'id'], where: { state: 'pending' } },
  ],
});

export class TrackingHit extends TrackingHitSchema.class {}
TrackingHitSchema.setClass(TrackingHit);
