import { html } from 'ghtml';
import type { Suppression } from '../../../db/entities/index.ts';
import { apiReason } from '../suppressions/suppressions.serializer.ts';
import { SUPPRESSION_API_REASONS } from '../suppressions/suppressions.schemas.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { pagerNav } from './dashboard-paging.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

export interface SuppressionsPageModel {
  signedIn: SignedIn;
  filters: { email: string; reason: string };
  suppressions: readonly Suppression[];
  olderHref: string | null;
  newestHref: string | null;
  form?: { email: string; detail: string };
  notice?: string;
  error?: string;
}

const REASON_LABELS: Record<string, string> = {
  bounce: 'hard bounce',
  complaint: 'spam complaint',
  unsubscribe: 'unsubscribed',
  manual: 'added by hand',
};

function suppressionRow(entry: Suppression): string {
  const reason = apiReason(entry.reason);
  return html`<tr>
    <th scope="row" data-label="Address">${entry.email}</th>
    <td data-label="Reason"><span class="state suppression-${reason}">${REASON_LABELS[reason] ?? reason}</span></td>
    <td data-label="Detail">${entry.detail ?? '—'}</td>
    <td data-label="Since">!${when(entry.createdAt)}</td>
    <td data-label=""><a href="/dashboard/suppressions/remove?email=${encodeURIComponent(entry.email)}">Remove…</a></td>
  </tr>`;
}

/** /dashboard/suppressions: the addresses sends are refused for, with why and since when; search, add. */
export function suppressionsPage(model: SuppressionsPageModel): string {
  const { signedIn, filters } = model;
  const filtered = filters.email !== '' || filters.reason !== '';
  const empty = filtered
    ? html`<p>No suppression matches. <a href="/dashboard/suppressions">Show all</a>.</p>`
    : html`<div class="card empty"><p><strong>No suppressed addresses.</strong></p><p>Hard bounces, spam complaints and unsubscribes are added here on their own; add an address by hand below to stop every send to it.</p></div>`;
  return layout(
    'Suppressions',
    html`!${message(model.notice, 'notice')}!${message(model.error)}
<form method="get" action="/dashboard/suppressions" class="card filters" role="search" aria-label="Search the suppressions">
  <div><label for="filter-email">Address</label>
    <input id="filter-email" name="email" type="email" maxlength="320" autocomplete="off" value="${filters.email}"></div>
  <div><label for="filter-reason">Reason</label>
    <select id="filter-reason" name="reason"><option value="">Any</option>!${SUPPRESSION_API_REASONS.map((r) => html`<option value="${r}"!${filters.reason === r ? ' selected' : ''}>${REASON_LABELS[r] ?? r}</option>`).join('')}</select></div>
  <div class="filter-actions"><button type="submit">Search</button>!${filtered ? html` <a href="/dashboard/suppressions">Clear</a>` : ''}</div>
</form>
<section aria-labelledby="suppressions-title">
  <h2 id="suppressions-title">Suppressed addresses, newest first</h2>
  <p class="hint">Every send to these addresses is refused (<code>403 RECIPIENT_SUPPRESSED</code>), whatever key or automation sends it.</p>
  !${
    model.suppressions.length === 0
      ? empty
      : html`<table class="keys cards"><thead><tr><th scope="col">Address</th><th scope="col">Reason</th><th scope="col">Detail</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>!${model.suppressions.map(suppressionRow).join('')}</tbody></table>`
  }
  !${pagerNav({ newest: model.newestHref, older: model.olderHref })}
</section>
<section aria-labelledby="add-title" class="card">
  <h2 id="add-title">Suppress an address</h2>
  <form method="post" action="/dashboard/suppressions">
    !${csrfField(signedIn.csrfToken)}
    <label for="suppress-email">Address</label>
    <input id="suppress-email" name="email" type="email" required maxlength="320" value="${model.form?.email ?? ''}">
    <label for="suppress-detail">Why <small>(optional, kept with the entry)</small></label>
    <input id="suppress-detail" name="detail" type="text" maxlength="1024" value="${model.form?.detail ?? ''}">
    <button type="submit">Suppress</button>
  </form>
</section>`,
    signedIn,
    'suppressions',
  );
}

/** /dashboard/suppressions/remove?email=: what removing does, before it is done. */
export function removeSuppressionPage(model: { signedIn: SignedIn; entry: Suppression }): string {
  const { entry, signedIn } = model;
  const reason = apiReason(entry.reason);
  return layout(
    `Remove ${entry.email} from the suppressions`,
    html`<p><a href="/dashboard/suppressions">← Suppressions</a></p>
<section class="card" aria-labelledby="consequences-title">
  <h2 id="consequences-title">Before you remove it</h2>
  <p><strong>${entry.email}</strong> is suppressed since !${when(entry.createdAt)} (${REASON_LABELS[reason] ?? reason}).</p>
  <ul>
    <li>Sends to it will pass again: the API, SMTP submission, broadcasts and automations.</li>
    <li>A contact with this address that is bounced, complained or suppressed goes back to active.</li>
    !${reason === 'bounce' || reason === 'complaint' ? html`<li><strong>Sending again to an address that ${reason === 'bounce' ? 'bounced' : 'complained'} harms your domain's reputation.</strong> Remove it only if you know the problem is gone.</li>` : ''}
    <li>The audit trail keeps who removed it and when.</li>
  </ul>
  <form method="post" action="/dashboard/suppressions/remove" data-confirm="Remove ${entry.email}? Sends to it will pass again.">
    !${csrfField(signedIn.csrfToken)}
    <input type="hidden" name="email" value="${entry.email}">
    <button type="submit" class="danger">Remove the suppression</button> <a href="/dashboard/suppressions">Keep it</a>
  </form>
</section>`,
    signedIn,
    'suppressions',
  );
}
