import { isId } from '../../../db/ids.ts';
import { AppError } from '../../errors.ts';
import type { ApiServices } from '../../api-composition.ts';
import { deliverabilityRecords } from '../domains/deliverability.fns.ts';
import { domainPage, domainsPage, PENDING_RELOAD_SECONDS, type DomainsPageModel } from './dashboard-domains.pages.ts';
import { form, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard.router.ts';
import { notePage } from './dashboard.pages.ts';

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
      kit.send(ctx, status, domainsPage({ signedIn, domains: await domains.listWorkspaceDomains(signedIn.orgId), ...extra }));
    }

    router.get('/domains', kit.requireSession, (ctx) => renderList(ctx, 200));

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
      const signedIn = kit.signedInOf(ctx);
      const id = ctx.params.id ?? '';
      // The workspace's own domains only (the read of GET /domains): another workspace's id is not found.
      const found = isId(id) ? (await domains.listWorkspaceDomains(signedIn.orgId)).find((row) => row.domain.id === id) : undefined;
      if (!found) return kit.notFound(ctx, 'domain');
      const reloading = found.domain.status === 'pending' && ctx.query.reload !== 'off';
      // The Refresh header reloads the page like <meta http-equiv="refresh"> (no script needed).
      if (reloading) ctx.set('Refresh', String(PENDING_RELOAD_SECONDS));
      kit.send(
        ctx,
        200,
        domainPage({
          signedIn,
          domain: found.domain,
          senders: found.senders,
          records: deliverabilityRecords(found.domain, config),
          reloading,
          ...(ctx.query.added === '1'
            ? { notice: `${found.domain.domain} was added. Publish the records below at your DNS provider, then check it.` }
            : {}),
          ...(ctx.query.checked === '1' ? { notice: `Checked just now: ${found.domain.status}.` } : {}),
        }),
      );
    });

    // Check now: the verifyDomain workflow, waited for (20 s at most); the page then shows what it found.
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
  };
}
