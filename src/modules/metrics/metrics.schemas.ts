import * as v from 'valibot';
import { METRICS_PERIODS } from './metrics.fns.ts';
import { StreamName } from '../streams/streams.schemas.ts';

export const MetricsQuery = v.object({
  period: v.optional(v.picklist(METRICS_PERIODS, `must be one of ${METRICS_PERIODS.join(', ')}`), '7d'),
  /** Only the events of this message stream's emails (Herald extension); contact counts are not per stream. */
  stream: v.optional(StreamName),
});

const Count = v.pipe(v.number(), v.integer(), v.minValue(0));
const Rate = v.pipe(v.number(), v.minValue(0));

/** One integer per email event type: the counters of the summary, campaigns and broadcasts. */
export const EventCounts = {
  sent: Count,
  delivered: Count,
  opened: Count,
  clicked: Count,
  bounced: Count,
  complained: Count,
  unsubscribed: Count,
};

const Rates = v.object({
  delivery: Rate,
  open: Rate,
  click: Rate,
  ctor: Rate,
  bounce: Rate,
  complaint: Rate,
  unsubscribe: Rate,
});

export const MetricsResponse = v.object({
  summary: v.object({ ...EventCounts, campaigns: Count }),
  rates: Rates,
  dailyVolume: v.array(
    v.object({
      date: v.pipe(v.string(), v.isoDate()),
      sent: Count,
      delivered: Count,
      opened: Count,
      clicked: Count,
      bounced: Count,
    }),
  ),
  topCampaigns: v.array(v.object({ broadcastId: v.string(), name: v.nullable(v.string()), ...EventCounts, rates: Rates })),
  contacts: v.object({ total: Count, active: Count, unsubscribed: Count, bounced: Count, complained: Count }),
  domains: v.array(
    v.object({
      domain: v.string(),
      sent: Count,
      delivered: Count,
      bounced: Count,
      complained: Count,
      rates: v.object({ delivery: Rate, bounce: Rate, complaint: Rate }),
    }),
  ),
  period: v.picklist(METRICS_PERIODS),
});
