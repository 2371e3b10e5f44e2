import { html } from 'ghtml';
import type { Domain, DomainStatus, SenderIdentity } from '../../../db/entities/index.ts';
import type { DeliverabilityRecord, DnsRecordKey } from '../domains/deliverability.fns.ts';
import type { DomainUse } from '../domains/domain-removal.service.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { trackingSection } from './dashboard-domain-tracking.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';
import type { ReputationStatus } from '../reputation/reputation.service.ts';
import type { WarmupView } from '../warmup/warmup.serializer.ts';
import { reputationBanner, warmupSection } from './dashboard-warmup.pages.ts';
import { domainPoolSection } from './dashboard-domain-pool.pages.ts';

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
  notice?: string | undefined;
  domains: readonly { domain: Domain; senders: readonly SenderIdentity[] }[];
  error?: string;
  /** The add form's value to show again after an error. */
  name?: string;
  reputation?: ReputationStatus;
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
    html`!${reputationBanner(model.reputation)}!${message(model.error)}!${message(model.notice, 'notice')}
<section aria-labelledby="domains-title">
  <h2 id="domains-title">Sending domains of ${signedIn.orgName}</h2>
  !${
    model.domains.length === 0
      ? html`<div class="empty"><p><strong>No domains yet.</strong> Add the domain you send from below: Herald gives you the DNS records to publish, then checks them.</p></div>`
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
  error?: string;
  /** The add-sender form's values to show again after an error. */
  sender?: { email: string; name: string };
  warmup?: WarmupView | undefined;
  reputation?: ReputationStatus;
  /** Where a tracking host's CNAME points (the tracking block, dashboard-domain-tracking.pages.ts). */
  trackingCnameTarget?: string;
  /** The egress IP pools a domain may pick (EGRESS_POOLS); the picker is shown only when there are some. */
  pools?: readonly string[];
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
    html`!${reputationBanner(model.reputation)}!${message(model.error)}!${message(model.notice, 'notice')}
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
!${model.warmup ? warmupSection(model.warmup, domain.id, signedIn.csrfToken) : ''}
!${sendersSection(model)}
<p><a href="/dashboard/domains/${domain.id}/dmarc">DMARC reports: who sends as ${domain.domain}</a></p>
!${model.trackingCnameTarget ? trackingSection(domain, signedIn.csrfToken, model.trackingCnameTarget) : ''}
!${model.pools && model.pools.length > 0 ? domainPoolSection({ signedIn, domain, pools: model.pools }) : ''}
<section aria-labelledby="delete-title" class="card">
  <h2 id="delete-title">Delete this domain</h2>
  !${
    signedIn.role === 'owner'
      ? html`<p>The workspace stops sending and receiving mail on ${domain.domain}. <a href="/dashboard/domains/${domain.id}/delete" class="danger-link">Delete ${domain.domain}…</a></p>`
      : html`<p class="hint">Only an owner of the workspace can delete a domain.</p>`
  }
</section>`,
    signedIn,
    'domains',
  );
}

/** The domain's named senders (the `sender_options` of GET /domains), with add and remove forms. */
function sendersSection(model: DomainPageModel): string {
  const { domain, signedIn } = model;
  const csrf = signedIn.csrfToken;
  const list =
    model.senders.length === 0
      ? html`<p>None named yet: the workspace ${domain.status === 'verified' ? 'sends' : 'can send, once the domain is verified,'} from any address on ${domain.domain}. Name the addresses your team and integrations should pick from (they are listed by <code>GET /api/v1/domains</code>).</p>`
      : html`<ul class="senders">!${model.senders
          .map(
            (s) =>
              html`<li><span>${s.name} &lt;${s.email}&gt;!${s.isDefault ? html` <small class="hint">(default)</small>` : ''}</span> <form method="post" action="/dashboard/domains/${domain.id}/senders/${s.id}/remove" class="inline-form">!${csrfField(csrf)}<button type="submit" class="danger">Remove<span class="visually-hidden"> ${s.email}</span></button></form></li>`,
          )
          .join('')}</ul>`;
  return html`<section aria-labelledby="senders-title">
  <h2 id="senders-title">Sender identities</h2>
  !${list}
  <form method="post" action="/dashboard/domains/${domain.id}/senders" class="card">
    !${csrfField(csrf)}
    <h3>Add a sender</h3>
    <label for="sender-name">Name</label>
    <input id="sender-name" name="name" type="text" required maxlength="200" autocomplete="off" value="${model.sender?.name ?? ''}">
    <label for="sender-email">Address</label>
    <input id="sender-email" name="email" type="email" required maxlength="320" autocomplete="off" spellcheck="false" aria-describedby="sender-hint" value="${model.sender?.email ?? ''}">
    <p class="hint" id="sender-hint">An address on ${domain.domain}, for example <code>support@${domain.domain}</code>. The first sender becomes the default.</p>
    <button type="submit">Add sender</button>
  </form>
</section>`;
}

/** The confirmation of a domain's deletion: what it does (or why it cannot yet), then one button. */
export function deleteDomainPage(model: { signedIn: SignedIn; use: DomainUse; error?: string }): string {
  const { signedIn, use } = model;
  const { domain } = use;
  const busy = use.waitingEmails > 0 || use.activeBroadcasts > 0;
  return layout(
    `Delete ${domain.domain}?`,
    html`!${message(model.error)}
<section class="card" aria-labelledby="consequences-title">
  <h2 id="consequences-title">What deleting does</h2>
  <ul>
    <li>The workspace can no longer send from addresses on ${domain.domain}: sends from them are refused (<code>DOMAIN_NOT_FOUND</code>)!${domain.isDefault ? ', and another domain becomes the default' : ''}.</li>
    <li>Mail arriving for ${domain.domain} is no longer taken into the inbox.</li>
    <li>Its DKIM key is destroyed!${use.senders > 0 ? html` and its ${String(use.senders)} sender identit${use.senders === 1 ? 'y is' : 'ies are'} removed` : ''}. Adding the domain again gives a new key: its DNS records have to be published again.</li>
    <li>Mail already sent from it stays in the email log.</li>
  </ul>
  !${
    busy
      ? html`<p class="error" role="alert">Mail is still on its way from ${domain.domain} (${String(use.waitingEmails)} email${use.waitingEmails === 1 ? '' : 's'} scheduled, queued or sending; ${String(use.activeBroadcasts)} broadcast${use.activeBroadcasts === 1 ? '' : 's'} scheduled or sending). Cancel it or let it finish, then delete the domain.</p>`
      : ''
  }
  <form method="post" action="/dashboard/domains/${domain.id}/delete" class="editor-actions">
    !${csrfField(signedIn.csrfToken)}
    <button type="submit" class="danger large"!${busy ? ' disabled' : ''}>Delete ${domain.domain}</button> <a href="/dashboard/domains/${domain.id}">Keep it</a>
  </form>
</section>`,
    signedIn,
    'domains',
  );
}
