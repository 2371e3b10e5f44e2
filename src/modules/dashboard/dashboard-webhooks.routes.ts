import type { ApiServices } from '../../http/routes.ts';
import type { DashboardArea } from './dashboard.router.ts';

/** The webhooks pages of the dashboard (/dashboard/webhooks). */
export function webhooksArea(_services: ApiServices): DashboardArea {
  return () => {};
}
