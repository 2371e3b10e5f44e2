import type Router from '@koa/router';
import { isId } from '../../../db/ids.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import type { WarmupService } from '../warmup/warmup.service.ts';
import { form, one, type DashboardKit } from './dashboard-kit.router.ts';

/** The daily caps typed in the warm-up form, or an error message. */
function parseSchedule(text: string): number[] | string {
  const caps = text
    .split(/[\s,]+/)
    .filter(Boolean)
    .map(Number);
  if (caps.length === 0 || caps.length > 90 || caps.some((cap) => !Number.isInteger(cap) || cap < 1)) {
    return 'The schedule is a list of 1 to 90 whole numbers of messages per day, each at least 1.';
  }
  return caps;
}

/** POST /dashboard/domains/:id/warmup: the schedule type (new, existing, off) and this domain's daily caps for it. */
export function domainWarmupRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  warmup: WarmupService,
  renderDomain: (
    ctx: Parameters<DashboardKit['signedInOf']>[0],
    status: number,
    extra: { error?: string; notice?: string },
  ) => Promise<void>,
): void {
  router.post('/domains/:id/warmup', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const id = ctx.params.id ?? '';
    if (!isId(id)) return kit.notFound(ctx, 'domain');
    const body = form(ctx);
    const mode = one(body.mode);
    if (mode !== 'new' && mode !== 'existing' && mode !== 'off')
      return renderDomain(ctx, 400, { error: 'Pick a schedule: new, existing or off.' });
    const schedule = parseSchedule(one(body.schedule));
    if (typeof schedule === 'string') return renderDomain(ctx, 400, { error: schedule });
    try {
      const plan = mode === 'off' ? undefined : { [mode === 'new' ? 'new_domain' : 'existing_domain']: schedule };
      await warmup.updateDomainWarmup(signedIn.orgId, id, { mode, ...(plan ? { plan } : {}) });
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'domain');
      throw error;
    }
    ctx.redirect(`/dashboard/domains/${id}?done=warmup#warmup`);
    ctx.status = 303;
  });
}
