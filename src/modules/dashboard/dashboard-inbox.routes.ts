import type { ApiServices } from '../../http/routes.ts';
import type { DashboardArea } from './dashboard.router.ts';

/** The inbox pages of the dashboard (/dashboard/inbox). */
export function inboxArea(_services: ApiServices): DashboardArea {
  return () => {};
}
