import { isId } from '../../../db/ids.ts';
import { AppError } from '../../errors.ts';
import type { ApiServices } from '../../api-composition.ts';
import { deliverabilityRecords } from '../domains/deliverability.fns.ts';
import type Router from '@koa/router';
import type { HeraldState } from '../../http/state.ts';
import {
  deleteDomainPage,
  domainPage,
  domainsPage,
  PENDING_RELOAD_SECONDS,
  type DomainPageModel,
  type DomainsPageModel,
} from './dashboard-domains.pages.ts';
import { domainTrackingRoutes } from './dashboard-domain-tracking.routes.ts';
import { form, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';
import { notePage } from './dashboard.pages.ts';
import { domainWarmupRoutes } from './dashboard-warmup.routes.ts';
import { domainPoolRoutes } from './dashboard-domain-pool.routes.ts';

/**
 * The domains pages of the dashboard (/dashboard/domains): the workspace's domains, adding one
 * (the domains service's rules and messages), and a domain's DNS records with copy buttons and
 * its verification status (the page of a pending domain reloads itself). The reads are those of
 * GET /api/v1/domains (listWorkspaceDomains, the expected records with the last check).
 */
export function domainsArea(services: ApiServices): DashboardArea {
  const { domains, domainChecks, config } = services;

  return (router, kit: DashboardKit) => {
    async function renderList(ctx: DashboardContext, status: number, extra: Partial<DomainsPageModel> = {}): Promise<void> {
      const signedIn = kit.signedInOf(ctx);
      const reputation = await services.reputation.status(signedIn.orgId);
      kit.send(ctx, status, domainsPage({ signedIn, domains: await domains.listWorkspaceDomains(signedIn.orgId), reputation, ...extra }));
    }

    /** The domain page of :id (the workspace's own domains only: another workspace's id is not found). */
    async function renderDomain(ctx: DashboardContext, status: number, extra: Partial<DomainPageModel> = {}): Promise<void> {
      const signedIn = kit.signedInOf(ctx);
      const id = idParam(ctx);
      const found = isId(id) ? (await domains.listWorkspaceDomains(signedIn.orgId)).find((row) => row.domain.id === id) : undefined;
      if (!found) return kit.notFound(ctx, 'domain');
      const reloading = status === 200 && found.domain.status === 'pending' && ctx.query.reload !== 'off';
      // The Refresh header reloads the page like <meta http-equiv="refresh"> (no script needed).
      if (reloading) ctx.set('Refresh', String(PENDING_RELOAD_SECONDS));
      kit.send(
        ctx,
        status,
        domainPage({
          signedIn,
          domain: found.domain,
          senders: found.senders,
          records: deliverabilityRecords(found.domain, config),
          pools: services.domainPools.poolNames(),
          reloading,
          warmup: (await services.warmup.describe(signedIn.orgId, [found.domain])).get(found.domain.id),
          reputation: await services.reputation.status(signedIn.orgId),
          trackingCnameTarget: services.trackingDomains.cnameTarget,
          ...(ctx.query.added === '1'
            ? { notice: `${found.domain.domain} was added. Publish the records below at your DNS provider, then check it.` }
            : {}),
          ...(ctx.query.checked === '1' ? { notice: `Checked just now: ${found.domain.status}.` } : {}),
          ...extra,
        }),
      );
    }

    router.get('/domains', kit.requireSession, (ctx) =>
      renderList(ctx, 200, ctx.query.deleted === '1' ? { notice: 'The domain was deleted.' } : {}),
    );

    router.post('/domains', kit.forms, kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const name = one(form(ctx).domain).trim();
      try {
        const added = await domains.addDomain({ orgId: signedIn.orgId, domain: name });
        ctx.redirect(`/dashboard/domains/${added.id}?added=1`);
        ctx.status = 303;
      } catch (error) {
        if (!(error instanceof AppError) || !['invalid_request', 'conflict', 'service_unavailable'].includes(error.code)) throw error;
        await renderList(ctx, error.status, { error: error.message, name });
      }
    });

    router.get('/domains/:id', kit.requireSession, async (ctx) => {
      const notices: Record<string, string> = {
        sender: 'The sender was added.',
        removed: 'The sender was removed.',
        warmup: 'The warm-up was saved.',
        tracking: 'The tracking host was saved and checked.',
        'tracking-invalid': 'The tracking host must be a subdomain of this domain, such as track.<domain>.',
        pool: 'The egress IP pool was saved.',
      };
      const notice = notices[one(ctx.query.done)];
      await renderDomain(ctx, 200, notice ? { notice } : {});
    });

    domainCheckRoutes(router, kit, domainChecks);
    domainSenderRoutes(router, kit, domains, renderDomain);
    domainPoolRoutes(router, kit, services.domainPools, renderDomain);
    domainDeleteRoutes(router, kit, services.domainRemoval);
    domainWarmupRoutes(router, kit, services.warmup, renderDomain);
    domainTrackingRoutes(router, kit, services.trackingDomains);
  };
}

/** Check now: the verifyDomain workflow, waited for (20 s at most); the page then shows what it found. */
function domainCheckRoutes(router: Router<HeraldState>, kit: DashboardKit, domainChecks: ApiServices['domainChecks']): void {
  router.post('/domains/:id/check', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const id = ctx.params.id ?? '';
    if (!isId(id)) return kit.notFound(ctx, 'domain');
    try {
      await domainChecks.check(signedIn.orgId, id);
    } catch (error) {
      if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'domain');
      if (error instanceof AppError && error.code === 'service_unavailable') {
        return kit.send(
          ctx,
          503,
          notePage(
            'The check is taking longer',
            "It keeps running and the domain's page will show its result; is Herald's worker running?",
            signedIn,
          ),
        );
      }
      throw error;
    }
    ctx.redirect(`/dashboard/domains/${id}?checked=1&reload=off`);
    ctx.status = 303;
  });
}

/** The :id of a route (a DashboardContext does not carry the router's parameter types). */
const idParam = (ctx: DashboardContext): string => (ctx.params as Record<string, string | undefined>).id ?? '';

const isAppError = (error: unknown, ...codes: string[]): error is AppError => error instanceof AppError && codes.includes(error.code);

/** Adding and removing a domain's named senders (members and owners, as GET /domains lists them). */
function domainSenderRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  domains: ApiServices['domains'],
  renderDomain: (ctx: DashboardContext, status: number, extra?: Partial<DomainPageModel>) => Promise<void>,
): void {
  router.post('/domains/:id/senders', kit.forms, kit.requireSession, async (ctx) => {
    const id = ctx.params.id ?? '';
    if (!isId(id)) return kit.notFound(ctx, 'domain');
    const sender = { email: one(form(ctx).email).trim(), name: one(form(ctx).name).trim() };
    try {
      await domains.addWorkspaceSender(kit.signedInOf(ctx).orgId, { domainId: id, ...sender });
    } catch (error) {
      if (isAppError(error, 'not_found')) return kit.notFound(ctx, 'domain');
      if (!isAppError(error, 'invalid_request', 'conflict')) throw error;
      return renderDomain(ctx, error.status, { error: error.message, sender });
    }
    ctx.redirect(`/dashboard/domains/${id}?done=sender&reload=off`);
    ctx.status = 303;
  });

  router.post('/domains/:id/senders/:senderId/remove', kit.forms, kit.requireSession, async (ctx) => {
    const id = ctx.params.id ?? '';
    const senderId = ctx.params.senderId ?? '';
    if (!isId(id) || !isId(senderId)) return kit.notFound(ctx, 'sender');
    try {
      await domains.removeSender(kit.signedInOf(ctx).orgId, senderId);
    } catch (error) {
      if (isAppError(error, 'not_found')) return kit.notFound(ctx, 'sender');
      throw error;
    }
    ctx.redirect(`/dashboard/domains/${id}?done=removed&reload=off`);
    ctx.status = 303;
  });
}

/** Deleting a domain: owners only, confirmed on a page that says what it does. */
function domainDeleteRoutes(router: Router<HeraldState>, kit: DashboardKit, removal: ApiServices['domainRemoval']): void {
  async function useOf(ctx: DashboardContext) {
    const id = idParam(ctx);
    try {
      return isId(id) ? await removal.domainUse(kit.signedInOf(ctx).orgId, id) : null;
    } catch (error) {
      if (isAppError(error, 'not_found')) return null;
      throw error;
    }
  }
  const ownersOnly = (ctx: DashboardContext) =>
    kit.send(ctx, 403, notePage('Only an owner can delete a domain', 'Ask an owner of the workspace to delete it.', kit.signedInOf(ctx)));

  router.get('/domains/:id/delete', kit.requireSession, async (ctx) => {
    const use = await useOf(ctx);
    if (!use) return kit.notFound(ctx, 'domain');
    if (kit.signedInOf(ctx).role !== 'owner') return ownersOnly(ctx);
    kit.send(ctx, 200, deleteDomainPage({ signedIn: kit.signedInOf(ctx), use }));
  });

  router.post('/domains/:id/delete', kit.forms, kit.requireSession, async (ctx) => {
    const use = await useOf(ctx);
    if (!use) return kit.notFound(ctx, 'domain');
    if (kit.signedInOf(ctx).role !== 'owner') return ownersOnly(ctx);
    try {
      await removal.deleteDomain(kit.signedInOf(ctx).orgId, use.domain.id);
    } catch (error) {
      if (isAppError(error, 'not_found')) return kit.notFound(ctx, 'domain');
      if (!isAppError(error, 'conflict')) throw error;
      return kit.send(ctx, 409, deleteDomainPage({ signedIn: kit.signedInOf(ctx), use: (await useOf(ctx)) ?? use, error: error.message }));
    }
    ctx.redirect('/dashboard/domains?deleted=1');
    ctx.status = 303;
  });
}
