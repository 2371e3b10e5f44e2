import type { MikroORM } from '@mikro-orm/postgresql';
import { scopeToOrg } from '../../../db/orm.ts';
import { periodWindow, summarizeMetrics, type ContactCounts, type MetricsPeriod, type MetricsSummary } from './metrics.fns.ts';
import {
  broadcastNames,
  countContacts,
  countEventsByDay,
  countEventsByDomain,
  topBroadcasts,
  workspaceDomainNames,
} from './metrics.repo.ts';

/** How many broadcasts topCampaigns lists. */
export const TOP_CAMPAIGNS = 5;

/**
 * The metrics summary of one workspace over a period of whole UTC days ending today, computed
 * from email_event_counts, the daily rollup of email_events (and the contacts' statuses). The
 * aggregates run side by side on separate pooled connections: each section is exact for the
 * moment its query ran, and summary and dailyVolume come from one query, so they always agree.
 */
export function createMetricsService({ orm, clock = () => new Date() }: { orm: MikroORM; clock?: () => Date }) {
  /** The period's aggregates and their summary, with the per-day counts they came from. */
  async function read(orgId: string, period: MetricsPeriod, stream?: string, options: { contacts: boolean } = { contacts: true }) {
    const window = periodWindow(period, clock());
    const em = () => scopeToOrg(orm.em, orgId);
    const [days, broadcasts, domains, contacts, workspaceDomains] = await Promise.all([
      countEventsByDay(em(), orgId, window, stream),
      topBroadcasts(em(), orgId, window, TOP_CAMPAIGNS, stream),
      countEventsByDomain(em(), orgId, window, stream),
      options.contacts ? countContacts(em(), orgId) : NO_CONTACTS,
      workspaceDomainNames(em()),
    ]);
    const names = await broadcastNames(
      em(),
      broadcasts.top.map((b) => b.broadcastId),
    );
    const summary = summarizeMetrics({
      period,
      window,
      days,
      campaigns: broadcasts.campaigns,
      topCampaigns: broadcasts.top,
      broadcastNames: names,
      domains,
      workspaceDomains,
      contacts,
    });
    return { summary, days, window };
  }

  return {
    /** GET /metrics: summary, rates, zero-filled daily volume, top campaigns, contacts, domains. */
    async getMetrics(orgId: string, period: MetricsPeriod, stream?: string): Promise<MetricsSummary> {
      return (await read(orgId, period, stream)).summary;
    },

    /**
     * GET /metrics' summary, rates and top campaigns and, from the same reads, each day of the
     * period (zero-filled) with sent, delivered, bounced and complained: the dashboard's metrics
     * page. The contacts are not counted (the page does not show them, and an exact count of a
     * million contacts alone takes longer than the page may).
     */
    async getMetricsWithDailyOutcomes(
      orgId: string,
      period: MetricsPeriod,
    ): Promise<{ metrics: DashboardMetrics; daily: DailyOutcomes[] }> {
      const { summary, days, window } = await read(orgId, period, undefined, { contacts: false });
      const byDay = new Map(days.map((d) => [d.day, d]));
      const daily = window.days.map((date) => {
        const d = byDay.get(date);
        return { date, sent: d?.sent ?? 0, delivered: d?.delivered ?? 0, bounced: d?.bounced ?? 0, complained: d?.complained ?? 0 };
      });
      return { metrics: { summary: summary.summary, rates: summary.rates, topCampaigns: summary.topCampaigns }, daily };
    },
  };
}

/** What the dashboard's metrics page shows of GET /metrics' summary. */
export type DashboardMetrics = Pick<MetricsSummary, 'summary' | 'rates' | 'topCampaigns'>;

const NO_CONTACTS: ContactCounts = { total: 0, active: 0, unsubscribed: 0, bounced: 0, complained: 0 };

/** One day's outcomes of a workspace's mail. */
export interface DailyOutcomes {
  date: string;
  sent: number;
  delivered: number;
  bounced: number;
  complained: number;
}

export type MetricsService = ReturnType<typeof createMetricsService>;
