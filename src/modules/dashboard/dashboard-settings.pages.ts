import { html } from 'ghtml';
import type { Organization } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField, layout, message } from './dashboard.pages.ts';

export interface SettingsPageModel {
  signedIn: SignedIn;
  org: Organization;
  limits: { name: number; postalAddress: number };
  /** The form's values to show again after a refusal. */
  values?: { name: string; postalAddress: string };
  notice?: string;
  error?: string;
}

/** /dashboard/settings: the workspace's name and postal address; owners edit them, members read them. */
export function settingsPage(model: SettingsPageModel): string {
  const { signedIn, org, limits } = model;
  const values = model.values ?? { name: org.name, postalAddress: org.postalAddress ?? '' };
  const facts = html`<dl class="facts">
    <dt>Name</dt><dd>${org.name}</dd>
    <dt>Postal address</dt><dd>!${org.postalAddress ? html`<span class="address">${org.postalAddress}</span>` : html`<span class="hint">None yet: broadcasts carry no postal address in their footer.</span>`}</dd>
    <dt>Workspace id</dt><dd><code>${org.id}</code></dd>
  </dl>`;
  const editor =
    signedIn.role === 'owner'
      ? html`<form method="post" action="/dashboard/settings" class="card">
    !${csrfField(signedIn.csrfToken)}
    <h2 id="edit-title">Edit the workspace</h2>
    <label for="org-name">Name</label>
    <input id="org-name" name="name" type="text" required maxlength="${String(limits.name)}" value="${values.name}">
    <label for="postal-address">Postal address</label>
    <textarea id="postal-address" name="postal_address" rows="4" maxlength="${String(limits.postalAddress)}" aria-describedby="address-hint">${values.postalAddress}</textarea>
    <p class="hint" id="address-hint">Printed in the footer of every broadcast, as anti-spam laws (CAN-SPAM) and mailbox providers expect of bulk mail. Leave it empty to remove it.</p>
    <button type="submit">Save settings</button>
  </form>`
      : html`<p class="hint">Only an owner of the workspace can change these settings.</p>`;
  return layout(
    'Workspace settings',
    html`!${message(model.error)}!${message(model.notice, 'notice')}
<section aria-labelledby="workspace-title" class="card">
  <h2 id="workspace-title">${org.name}</h2>
  !${facts}
</section>
!${editor}`,
    signedIn,
    'settings',
  );
}
