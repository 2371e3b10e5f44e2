import { html } from 'ghtml';
import type { Domain, DomainStatus, SenderIdentity } from '../../../db/entities/index.ts';
import type { DeliverabilityRecord, DnsRecordKey } from '../domains/deliverability.fns.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/** How often the page of a pending domain reloads itself, in seconds. */
export const PENDING_RELOAD_SECONDS = 30;

const RECORD_LABELS: Record<DnsRecordKey, string> = { spf: 'SPF', dkim: 'DKIM', dmarc: 'DMARC', return_path: 'Return path' };

const STATUS_TEXT: Record<DomainStatus, string> = {
  pending: 'Not verified yet: publish the records below.',
  verified: 'Verified: the workspace can send from any address on this domain.',
  attention: 'A required record was missing or wrong at the last check: sending from this domain is paused until it is fixed.',
};

const RECORD_STATUS_TEXT: Record<DeliverabilityRecord['status'], string> = {
  verified: 'found',
  missing: 'missing',
  mismatch: 'wrong value',
  unknown: 'not checked',
};

const statusText = (status: DomainStatus) => STATUS_TEXT[status];

/** One domain's status as a badge (the word itself, not only its colour). */
const domainState = (status: DomainStatus) => html`<span class="state ${status}">${status}</span>`;

export interface DomainsPageModel {
  signedIn: SignedIn;
  domains: readonly { domain: Domain; senders: readonly SenderIdentity[] }[];
  error?: string;
  /** The add form's value to show again after an error. */
  name?: string;
}

function domainRow({ domain, senders }: DomainsPageModel['domains'][number]): string {
  return html`<tr>
    <th scope="row" data-label="Domain"><a href="/dashboard/domains/${domain.id}">${domain.domain}</a>!${domain.isDefault ? html` <small class="hint">(default)</small>` : ''}</th>
    <td data-label="Status">!${domainState(domain.status)}</td>
    <td data-label="Senders">${senders.length === 0 ? '—' : senders.map((s) => s.email).join(', ')}</td>
    <td data-label="Last checked">!${when(domain.lastCheckedAt)}</td>
    <td data-label="Added">!${when(domain.createdAt)}</td>
  </tr>`;
}

/** /dashboard/domains: the workspace's domains and the form that adds one. */
export function domainsPage(model: DomainsPageModel): string {
  const { signedIn } = model;
  return layout(
    'Domains',
    html`!${message(model.error)}
<section aria-labelledby="domains-title">
  <h2 id="domains-title">Sending domains of ${signedIn.orgName}</h2>
  !${
    model.domains.length === 0
      ? html`<p>No domains yet. Add the domain you send from: Herald gives you the DNS records to publish.</p>`
      : html`<table class="keys cards"><thead><tr><th scope="col">Domain</th><th scope="col">Status</th><th scope="col">Senders</th><th scope="col">Last checked</th><th scope="col">Added</th></tr></thead>
      <tbody>!${model.domains.map(domainRow).join('')}</tbody></table>`
  }
</section>
<section aria-labelledby="add-title" class="card">
  <h2 id="add-title">Add a domain</h2>
  <form method="post" action="/dashboard/domains">
    !${csrfField(signedIn.csrfToken)}
    <label for="domain-name">Domain name</label>
    <input id="domain-name" name="domain" required maxlength="253" autocomplete="off" spellcheck="false" aria-describedby="domain-hint" value="${model.name ?? ''}">
    <p class="hint" id="domain-hint">For example <code>mail.example.com</code>. The first domain of a workspace becomes its default.</p>
    <button type="submit">Add domain</button>
  </form>
</section>`,
    signedIn,
    'domains',
  );
}

export interface DomainPageModel {
  signedIn: SignedIn;
  domain: Domain;
  senders: readonly SenderIdentity[];
  records: Record<DnsRecordKey, DeliverabilityRecord>;
  /** The page reloads itself (pending domain, not turned off). */
  reloading: boolean;
  notice?: string;
}

/** A value with its copy button (assets/dashboard.js copies the element's text). */
const copyable = (id: string, value: string, label: string) =>
  html`<div class="copy-cell"><code id="${id}">${value}</code><button type="button" data-copy="${id}">Copy<span class="visually-hidden"> ${label}</span></button></div>`;

function recordRow(key: DnsRecordKey, record: DeliverabilityRecord): string {
  const label = RECORD_LABELS[key];
  const id = `record-${key.replace('_', '-')}`;
  return html`<tr>
    <th scope="row" data-label="Record">${label}<br><small class="hint">${record.required ? 'required' : 'recommended'}</small></th>
    <td data-label="Type"><code>${record.type}</code></td>
    <td data-label="Host">!${copyable(`${id}-host`, record.name, `${label} host`)}</td>
    <td data-label="Value">!${copyable(`${id}-value`, record.value, `${label} value`)}</td>
    <td data-label="Check"><span class="state record-${record.status}">${RECORD_STATUS_TEXT[record.status]}</span>!${
      record.status === 'mismatch' && record.found !== null
        ? html`<details><summary>What DNS has</summary><code class="found">${record.found}</code></details>`
        : ''
    }</td>
  </tr>`;
}

/** /dashboard/domains/:id: the records to publish, each with a copy button, and the verification status. */
export function domainPage(model: DomainPageModel): string {
  const { signedIn, domain } = model;
  const verification =
    domain.status === 'verified'
      ? html`<p>Verified on !${when(domain.verifiedAt)}.</p>`
      : html`<p>Herald looks these records up in DNS when you check the domain (and an operator can, with <code>herald admin domain verify ${domain.id}</code>); verified domains and those needing attention are re-checked every day at 00:00 UTC. DNS changes can take a while to be seen.</p>`;
  const checkNow = html`<form method="post" action="/dashboard/domains/${domain.id}/check">!${csrfField(signedIn.csrfToken)}<button type="submit">Check now</button></form>`;
  const reload =
    domain.status !== 'pending'
      ? ''
      : model.reloading
        ? html`<p class="hint">This page reloads every ${String(PENDING_RELOAD_SECONDS)} seconds while the domain is pending. <a href="/dashboard/domains/${domain.id}?reload=off">Stop reloading</a></p>`
        : html`<p class="hint"><a href="/dashboard/domains/${domain.id}">Reload the status</a> (and keep reloading every ${String(PENDING_RELOAD_SECONDS)} seconds)</p>`;
  return layout(
    domain.domain,
    html`!${message(model.notice, 'notice')}
<p><a href="/dashboard/domains">← All domains</a></p>
<section aria-labelledby="status-title" class="card">
  <h2 id="status-title">Verification</h2>
  <p>!${domainState(domain.status)} ${statusText(domain.status)}</p>
  !${verification}
  !${checkNow}
  <p class="hint">Last checked: !${when(domain.lastCheckedAt)}.!${domain.reputationState === 'recovery' ? html` Sending is paused while the domain's reputation recovers.` : ''}</p>
  !${reload}
</section>
<section aria-labelledby="records-title">
  <h2 id="records-title">DNS records to publish</h2>
  <p>Add these records at your DNS provider. SPF, DKIM and the return path are required; DMARC is recommended.</p>
  <table class="keys cards records"><thead><tr><th scope="col">Record</th><th scope="col">Type</th><th scope="col">Host</th><th scope="col">Value</th><th scope="col">Last check</th></tr></thead>
  <tbody>!${(Object.keys(RECORD_LABELS) as DnsRecordKey[]).map((key) => recordRow(key, model.records[key])).join('')}</tbody></table>
</section>
<section aria-labelledby="senders-title">
  <h2 id="senders-title">Sender identities</h2>
  !${
    model.senders.length === 0
      ? domain.status === 'verified'
        ? html`<p>None named: the workspace sends from any address on ${domain.domain}.</p>`
        : html`<p>None yet: once the domain is verified, the workspace can send from any address on it.</p>`
      : html`<ul>!${model.senders.map((s) => html`<li>${s.name} &lt;${s.email}&gt;!${s.isDefault ? html` <small class="hint">(default)</small>` : ''}</li>`).join('')}</ul>`
  }
</section>`,
    signedIn,
    'domains',
  );
}
