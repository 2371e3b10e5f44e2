import type Router from '@koa/router';
import { isId } from '../../../db/ids.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import type { DomainPoolService } from '../egress/domain-pool.service.ts';
import type { DomainPageModel } from './dashboard-domains.pages.ts';
import { form, one, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

/** Picking a domain's egress IP pool on its page (PATCH /domains/:id's rules and messages). */
export function domainPoolRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  pools: DomainPoolService,
  renderDomain: (ctx: DashboardContext, status: number, extra?: Partial<DomainPageModel>) => Promise<void>,
): void {
  router.post('/domains/:id/ip-pool', kit.forms, kit.requireSession, async (ctx) => {
    const id = ctx.params.id ?? '';
    if (!isId(id)) return kit.notFound(ctx, 'domain');
    const pool = one(form(ctx).ip_pool).trim();
    try {
      await pools.setDomainPool(kit.signedInOf(ctx).orgId, id, pool === '' ? null : pool);
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'domain');
      if (!(error instanceof AppError) || error.code !== 'invalid_request') throw error;
      return renderDomain(ctx, error.status, { error: error.message });
    }
    ctx.redirect(`/dashboard/domains/${id}?done=pool&reload=off`);
    ctx.status = 303;
  });
}
