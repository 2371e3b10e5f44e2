import { html } from 'ghtml';
import type { Domain } from '../../../db/entities/index.ts';
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
