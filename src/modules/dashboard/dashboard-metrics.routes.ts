import type { ApiServices } from '../../http/routes.ts';
import type { DashboardArea } from './dashboard.router.ts';

/** The metrics pages of the dashboard (/dashboard/metrics). */
export function metricsArea(_services: ApiServices): DashboardArea {
  return () => {};
}
