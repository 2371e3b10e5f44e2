import type Router from '@koa/router';
import { html } from 'ghtml';
import type { Domain } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import { isId } from '../../../db/ids.ts';
import type { ApiServices } from '../../api-composition.ts';
import { form, one, type DashboardKit } from './dashboard.router.ts';
import { csrfField, when } from './dashboard.pages.ts';

/** The domain page's tracking host block: the host, its state, the CNAME to publish, one form to set, check or remove it. */
export function trackingSection(domain: Domain, csrfToken: string, cnameTarget: string): string {
  const state = !domain.trackingHost
    ? html`<p>No tracking host: open pixels and tracked links use Herald's own address.</p>`
    : domain.trackingVerifiedAt
      ? html`<p><strong>${domain.trackingHost}</strong> is verified (since !${when(domain.trackingVerifiedAt)}); tracked mail of this domain uses it.</p>`
      : html`<p><strong>${domain.trackingHost}</strong> is not verified yet: publish <code>${domain.trackingHost} CNAME ${cnameTarget}</code>!${domain.trackingFound ? html` (found: <code>${domain.trackingFound}</code>)` : ''}, then save again.</p>`;
  return html`<section aria-labelledby="tracking-title" class="card">
  <h2 id="tracking-title">Tracking host</h2>
  !${state}
  <form method="post" action="/dashboard/domains/${domain.id}/tracking">
    !${csrfField(csrfToken)}
    <label for="tracking-host">Host (a CNAME to ${cnameTarget}; empty to remove)</label>
    <input id="tracking-host" name="host" type="text" maxlength="253" autocomplete="off" spellcheck="false" placeholder="track.${domain.domain}" value="${domain.trackingHost ?? ''}">
    <button type="submit">Save and check</button>
  </form>
</section>`;
}

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
