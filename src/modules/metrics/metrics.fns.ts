import type { EmailEventType } from '../../../db/entities/index.ts';

export const METRICS_PERIODS = ['7d', '14d', '30d', '90d'] as const;
export type MetricsPeriod = (typeof METRICS_PERIODS)[number];

const DAY_MS = 24 * 3600 * 1000;
/** Rates are fractions of 1 rounded to this many decimals (0.1234 = 12.34 %). */
const RATE_DECIMALS = 4;

export type EventCounts = Record<EmailEventType, number>;

/** The time range a period covers: whole UTC days ending with today, oldest first. */
export interface PeriodWindow {
  /** Start of the oldest day (inclusive). */
  from: Date;
  /** Start of tomorrow (exclusive). */
  to: Date;
  /** Every day of the window as `YYYY-MM-DD`, oldest first. */
  days: string[];
}

/** `7d` → the last 7 UTC days including today (from 00:00 six days ago to the end of today). */
export function periodWindow(period: MetricsPeriod, now: Date): PeriodWindow {
  const count = Number(period.slice(0, -1));
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = today - (count - 1) * DAY_MS;
  const days = Array.from({ length: count }, (_, i) => new Date(from + i * DAY_MS).toISOString().slice(0, 10));
  return { from: new Date(from), to: new Date(today + DAY_MS), days };
}

/** numerator / denominator rounded to 4 decimals; 0 when the denominator is 0. */
export function rate(numerator: number, denominator: number): number {
  if (denominator === 0) return 0;
  const scale = 10 ** RATE_DECIMALS;
  return Math.round((numerator / denominator) * scale) / scale;
}

/** The seven rates of a set of counts (delivery and bounce per sent, the rest per delivered; ctor per opened). */
export function ratesOf(c: EventCounts) {
  return {
    delivery: rate(c.delivered, c.sent),
    open: rate(c.opened, c.delivered),
    click: rate(c.clicked, c.delivered),
    ctor: rate(c.clicked, c.opened),
    bounce: rate(c.bounced, c.sent),
    complaint: rate(c.complained, c.delivered),
    unsubscribe: rate(c.unsubscribed, c.delivered),
  };
}

export interface DayCounts extends EventCounts {
  day: string;
}

export interface BroadcastCounts extends EventCounts {
  broadcastId: string;
}

export interface DomainCounts extends EventCounts {
  domain: string;
}

export interface ContactCounts {
  total: number;
  active: number;
  unsubscribed: number;
  bounced: number;
  complained: number;
}

export interface MetricsInput {
  period: MetricsPeriod;
  window: PeriodWindow;
  days: readonly DayCounts[];
  /** Number of broadcasts with at least one event in the window. */
  campaigns: number;
  /** The top broadcasts, already ordered (most sent first). */
  topCampaigns: readonly BroadcastCounts[];
  broadcastNames: ReadonlyMap<string, string>;
  domains: readonly DomainCounts[];
  /** Every domain of the workspace, shown even without events. */
  workspaceDomains: readonly string[];
  contacts: ContactCounts;
}

const ZERO: EventCounts = {
  sent: 0,
  delivered: 0,
  deferred: 0,
  failed: 0,
  opened: 0,
  clicked: 0,
  bounced: 0,
  complained: 0,
  unsubscribed: 0,
};

/** The spec's counters (deferred and failed are kept in the rollup but not part of the summary shape). */
const countsOf = (c: EventCounts) => ({
  sent: c.sent,
  delivered: c.delivered,
  opened: c.opened,
  clicked: c.clicked,
  bounced: c.bounced,
  complained: c.complained,
  unsubscribed: c.unsubscribed,
});

/** The data of GET /metrics, assembled from the aggregate rows (zero-filled, rates computed). */
export function summarizeMetrics(input: MetricsInput) {
  const totals = { ...ZERO };
  for (const day of input.days) {
    for (const type of Object.keys(ZERO) as EmailEventType[]) totals[type] += day[type];
  }
  const byDay = new Map(input.days.map((d) => [d.day, d]));
  const byDomain = new Map(input.domains.map((d) => [d.domain, d]));
  for (const name of input.workspaceDomains) if (!byDomain.has(name)) byDomain.set(name, { domain: name, ...ZERO });
  return {
    summary: { ...countsOf(totals), campaigns: input.campaigns },
    rates: ratesOf(totals),
    dailyVolume: input.window.days.map((date) => {
      const d = byDay.get(date) ?? ZERO;
      return { date, sent: d.sent, delivered: d.delivered, opened: d.opened, clicked: d.clicked, bounced: d.bounced };
    }),
    topCampaigns: input.topCampaigns.map((c) => ({
      broadcastId: c.broadcastId,
      name: input.broadcastNames.get(c.broadcastId) ?? null,
      ...countsOf(c),
      rates: ratesOf(c),
    })),
    contacts: { ...input.contacts },
    domains: [...byDomain.values()]
      .sort((a, b) => b.sent - a.sent || (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0))
      .map((d) => ({
        domain: d.domain,
        sent: d.sent,
        delivered: d.delivered,
        bounced: d.bounced,
        complained: d.complained,
        rates: { delivery: rate(d.delivered, d.sent), bounce: rate(d.bounced, d.sent), complaint: rate(d.complained, d.delivered) },
      })),
    period: input.period,
  };
}

export type MetricsSummary = ReturnType<typeof summarizeMetrics>;
