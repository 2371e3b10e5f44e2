import { defineRoute } from '../../http/route.ts';
import type { MetricsService } from './metrics.service.ts';
import { MetricsQuery, MetricsResponse } from './metrics.schemas.ts';

/**
 * GET /metrics?period=7d|14d|30d|90d (default 7d; anything else is 400). Counts are email
 * events of the period's whole UTC days ending today; rates are fractions rounded to 4
 * decimals (0 when the denominator is 0); dailyVolume has one entry per day, oldest first.
 */
export function createMetricsRoutes(deps: { metrics: MetricsService }) {
  return [
    defineRoute({
      operationId: 'getMetrics',
      method: 'GET',
      path: '/metrics',
      summary: 'Sending and engagement summary for a period',
      description:
        'Rates: delivery = delivered/sent, open = opened/delivered, click = clicked/delivered, ctor = clicked/opened, ' +
        'bounce = bounced/sent, complaint = complained/delivered, unsubscribe = unsubscribed/delivered. ' +
        'campaigns = broadcasts with events in the period; topCampaigns = the 5 with the most sent. ' +
        "Herald extension: `stream` counts only the events of that message stream's emails (contacts are not per stream).",
      tag: 'Metrics',
      scope: 'metrics:read',
      query: MetricsQuery,
      response: { status: 200, description: 'The metrics summary', schema: MetricsResponse },
      errors: ['invalid_request'],
      async handle({ caller, query }) {
        return { status: 200, data: await deps.metrics.getMetrics(caller.orgId, query.period, query.stream) };
      },
    }),
  ];
}
