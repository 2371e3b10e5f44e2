import type { ApiServices } from '../../http/routes.ts';
import type { DashboardArea } from './dashboard.router.ts';

/** The domains pages of the dashboard (/dashboard/domains). */
export function domainsArea(_services: ApiServices): DashboardArea {
  return () => {};
}
