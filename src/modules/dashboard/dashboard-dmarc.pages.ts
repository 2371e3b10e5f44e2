import { html } from 'ghtml';
import type { DmarcReport } from '../../../db/entities/index.ts';
import type { DmarcSource } from '../dmarc/dmarc.repo.ts';
import type { DmarcSettings } from '../dmarc/dmarc.service.ts';
import { reportAddress, ruaTag } from '../dmarc/dmarc.fns.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { layout, when } from './dashboard.pages.ts';

export interface DmarcPageModel {
  signedIn: SignedIn;
  settings: DmarcSettings;
  /** The busiest source addresses of the window, most messages first. */
  sources: DmarcSource[];
  reports: DmarcReport[];
  windowDays: number;
}

/** A source's verdict in words (not only colour): every message passed, none did, or some. */
function verdict(source: DmarcSource): string {
  const word = source.dmarcFail === 0 ? 'passes' : source.dmarcPass === 0 ? 'fails' : 'partly';
  return html`<span class="state ${word === 'passes' ? 'verified' : word === 'fails' ? 'attention' : 'pending'}">${word}</span>`;
}

function sourceRow(source: DmarcSource): string {
  return html`<tr><td><code>${source.sourceIp}</code></td><td>!${verdict(source)}</td><td>${String(source.messages)}</td><td>${String(source.dmarcPass)}</td><td>${String(source.dmarcFail)}</td><td>${String(source.dkimAligned)}</td><td>${String(source.spfAligned)}</td><td>${String(source.quarantined + source.rejected)}</td><td>${source.reporters.join(', ')}</td><td>!${when(source.lastSeen)}</td></tr>`;
}

function reportRow(report: DmarcReport): string {
  return html`<tr><td>${report.reporterOrg}</td><td><code>${report.reportId}</code></td><td>!${when(report.dateBegin)} – !${when(report.dateEnd)}</td><td>${String(report.recordCount)}</td><td>${String(report.messageCount)}</td><td>!${when(report.createdAt)}</td></tr>`;
}

/**
 * A domain's DMARC aggregate reports: who sends as the domain (per source address, whether
 * its mail passes DMARC with aligned DKIM or SPF), the latest reports, and, until the first
 * report arrives, what to publish so receivers send them.
 */
export function dmarcPage(model: DmarcPageModel): string {
  const { signedIn, settings, sources, reports } = model;
  const { domain, localPart } = settings;
  const address = reportAddress(domain.domain, localPart);
  const publish = html`<p>Publish <code>${ruaTag(domain.domain, localPart)}</code> in the DMARC record of ${domain.domain} (the TXT record at <code>_dmarc.${domain.domain}</code>), for example <code>v=DMARC1; p=none; ${ruaTag(domain.domain, localPart)}</code>. Receivers then send a report about the mail they saw from ${domain.domain} about once a day.</p>`;
  const pending = domain.status === 'pending' ? html`<p class="hint">Reports are received only once ${domain.domain} is verified.</p>` : '';
  const body =
    reports.length === 0
      ? html`<section aria-labelledby="empty-title" class="card"><h2 id="empty-title">No reports yet</h2>!${publish}!${pending}</section>`
      : html`<section aria-labelledby="sources-title">
  <h2 id="sources-title">Who sends as ${domain.domain}</h2>
  <p>Sources seen in reports of the last ${String(model.windowDays)} days, most messages first. A source passes DMARC when DKIM or SPF passed aligned with ${domain.domain}; a source you do not recognise that fails is someone else using your domain.</p>
  ${sources.length === 0 ? html`<p>No report of the last ${String(model.windowDays)} days lists a source.</p>` : ''}
  !${sources.length === 0 ? '' : html`<table class="keys cards"><thead><tr><th scope="col">Source IP</th><th scope="col">DMARC</th><th scope="col">Messages</th><th scope="col">Pass</th><th scope="col">Fail</th><th scope="col">DKIM aligned</th><th scope="col">SPF aligned</th><th scope="col">Quarantined or rejected</th><th scope="col">Reported by</th><th scope="col">Last seen</th></tr></thead><tbody>!${sources.map(sourceRow).join('')}</tbody></table>`}
</section>
<section aria-labelledby="reports-title">
  <h2 id="reports-title">Latest reports</h2>
  <table class="keys cards"><thead><tr><th scope="col">Reporter</th><th scope="col">Report id</th><th scope="col">Period</th><th scope="col">Records</th><th scope="col">Messages</th><th scope="col">Received</th></tr></thead><tbody>!${reports.map(reportRow).join('')}</tbody></table>
</section>`;
  return layout(
    `DMARC reports for ${domain.domain}`,
    html`<p><a href="/dashboard/domains/${domain.id}">← ${domain.domain}</a></p>
<p>Reports go to <code>${address}</code> (change the address with <code>PATCH /api/v1/domains/${domain.id}/dmarc</code>).</p>
!${body}`,
    signedIn,
    'domains',
  );
}
