import { html } from 'ghtml';
import type { Domain } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField } from './dashboard.pages.ts';

/** The domain page's egress IP pool picker: the operator's pools (EGRESS_POOLS), or the default. */
export function domainPoolSection(model: { signedIn: SignedIn; domain: Domain; pools: readonly string[] }): string {
  const { domain, pools } = model;
  const option = (value: string, label: string) =>
    html`<option value="${value}"!${(domain.ipPool ?? '') === value ? ' selected' : ''}>${label}</option>`;
  return html`<section aria-labelledby="pool-title" class="card">
  <h2 id="pool-title">Egress IP pool</h2>
  <form method="post" action="/dashboard/domains/${domain.id}/ip-pool">
    !${csrfField(model.signedIn.csrfToken)}
    <label for="ip-pool">Pool this domain's mail leaves from</label>
    <select id="ip-pool" name="ip_pool" aria-describedby="ip-pool-hint">!${option('', 'Default')}!${pools.map((pool) => option(pool, pool)).join('')}</select>
    <p class="hint" id="ip-pool-hint">The pools are the server's source addresses, set up by its operator. Each new address warms up over about two weeks.</p>
    <button type="submit">Save pool</button>
  </form>
</section>`;
}
