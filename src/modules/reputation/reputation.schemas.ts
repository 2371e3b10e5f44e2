import * as v from 'valibot';
import { Timestamp } from '../../http/schemas.ts';

export const ReputationResponse = v.object({
  policy: v.object({
    window_hours: v.number(),
    min_volume: v.number(),
    max_bounce_rate: v.number(),
    max_complaint_rate: v.number(),
    pause: v.picklist(['broadcast', 'all']),
  }),
  paused_at: v.nullable(Timestamp),
  pause: v.nullable(v.record(v.string(), v.unknown())),
});
