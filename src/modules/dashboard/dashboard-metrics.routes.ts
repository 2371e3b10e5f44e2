import type { ApiServices } from '../../api-composition.ts';
import type { DashboardArea, DashboardContext } from './dashboard-kit.router.ts';
import { DASHBOARD_PERIODS, metricsPage } from './dashboard-metrics.pages.ts';

/** The metrics page of the dashboard (/dashboard/metrics?period=7d|30d|90d), on GET /metrics' service. */
export function metricsArea(services: ApiServices): DashboardArea {
  return (router, kit) => {
    router.get('/metrics', kit.requireSession, async (ctx: DashboardContext) => {
      const signedIn = kit.signedInOf(ctx);
      const asked = String(ctx.query.period ?? '7d');
      const period = DASHBOARD_PERIODS.find((p) => p === asked) ?? '7d';
      const { metrics, daily } = await services.metrics.getMetricsWithDailyOutcomes(signedIn.orgId, period);
      kit.send(ctx, 200, metricsPage({ signedIn, period, metrics, daily }));
    });
  };
}
