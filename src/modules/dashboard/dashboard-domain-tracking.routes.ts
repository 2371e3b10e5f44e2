import type Router from '@koa/router';
import { isId } from '../../../db/ids.ts';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import { form, one, type DashboardKit } from './dashboard-kit.router.ts';

/** POST /dashboard/domains/:id/tracking: sets (or clears) the host through the API's service, then shows the page. */
export function domainTrackingRoutes(router: Router<HeraldState>, kit: DashboardKit, tracking: ApiServices['trackingDomains']): void {
  router.post('/domains/:id/tracking', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const id = ctx.params.id ?? '';
    if (!isId(id)) return kit.notFound(ctx, 'domain');
    const field = one(form(ctx).host).trim();
    const host = field === '' ? null : field;
    try {
      await tracking.setHost(signedIn.orgId, id, host);
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'domain');
      if (error instanceof AppError && error.code === 'invalid_request') {
        ctx.redirect(`/dashboard/domains/${id}?done=tracking-invalid&reload=off`);
        ctx.status = 303;
        return;
      }
      throw error;
    }
    ctx.redirect(`/dashboard/domains/${id}?done=tracking&reload=off`);
    ctx.status = 303;
  });
}
