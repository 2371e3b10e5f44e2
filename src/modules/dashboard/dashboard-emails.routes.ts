import type { ApiServices } from '../../http/routes.ts';
import type { DashboardArea } from './dashboard.router.ts';

/** The emails pages of the dashboard (/dashboard/emails). */
export function emailsArea(_services: ApiServices): DashboardArea {
  return () => {};
}
