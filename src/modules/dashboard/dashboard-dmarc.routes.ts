import type { ApiServices } from '../../api-composition.ts';
import { DEFAULT_SOURCES_WINDOW_DAYS } from '../dmarc/dmarc.fns.ts';
import { dmarcPage } from './dashboard-dmarc.pages.ts';
import { orNotFound, pathId, type DashboardArea } from './dashboard-kit.router.ts';

/** Source addresses and reports a page shows at most. */
const PAGE_SOURCES = 100;
const PAGE_REPORTS = 20;

/**
 * /dashboard/domains/:id/dmarc: the domain's DMARC aggregate reports, read through the DMARC
 * service as GET /api/v1/domains/{id}/dmarc/sources and /reports do (another workspace's domain
 * is not found).
 */
export function dmarcArea(services: Pick<ApiServices, 'dmarc'>): DashboardArea {
  const { dmarc } = services;
  return (router, kit) => {
    router.get('/domains/:id/dmarc', kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const id = pathId(ctx);
      const settings = await orNotFound(dmarc.getSettings(signedIn.orgId, id));
      if (!settings) return kit.notFound(ctx, 'domain');
      const since = new Date(Date.now() - DEFAULT_SOURCES_WINDOW_DAYS * 86_400_000);
      const [sources, reports] = await Promise.all([
        dmarc.listSources(signedIn.orgId, { domainId: id, since, limit: PAGE_SOURCES, order: 'volume' }),
        dmarc.listReports(signedIn.orgId, id, { limit: PAGE_REPORTS }),
      ]);
      kit.send(ctx, 200, dmarcPage({ signedIn, settings, sources, reports: reports.items, windowDays: DEFAULT_SOURCES_WINDOW_DAYS }));
    });
  };
}
