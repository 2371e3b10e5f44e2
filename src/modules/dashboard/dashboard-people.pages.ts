import { html } from 'ghtml';
import type { DashboardInvite, User } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

export interface PeoplePageModel {
  signedIn: SignedIn;
  users: readonly User[];
  invitations: readonly DashboardInvite[];
  /** An invitation just created: its link, shown this once. */
  invited?: { email: string; url: string };
  notice?: string;
  error?: string;
  form?: { email?: string; role?: string };
}

function personRow(user: User, signedIn: SignedIn): string {
  const state = user.passwordHash ? 'password' : 'no password';
  const removable = signedIn.role === 'owner' && user.id !== signedIn.userId && user.passwordHash !== null;
  return html`<tr>
    <td data-label="Name">${user.name}!${user.id === signedIn.userId ? html` <small class="hint">(you)</small>` : ''}</td>
    <td data-label="Email">${user.email}</td>
    <td data-label="Role">${user.role}</td>
    <td data-label="Access"><span class="state ${state === 'password' ? 'active' : 'revoked'}">${state}</span></td>
    <td data-label="Since">!${when(user.createdAt)}</td>
    <td data-label="">!${
      removable
        ? html`<form method="post" action="/dashboard/people/${user.id}/revoke" data-confirm="Remove ${user.name}'s access? They are signed out everywhere at once.">!${csrfField(signedIn.csrfToken)}<button type="submit" class="danger">Remove access</button></form>`
        : ''
    }</td>
  </tr>`;
}

function inviteItem(invite: DashboardInvite, signedIn: SignedIn): string {
  const cancel =
    signedIn.role === 'owner'
      ? html` <form method="post" action="/dashboard/people/invitations/${invite.id}/cancel" class="inline" data-confirm="Cancel the invitation for ${invite.email}? Its link stops working.">!${csrfField(signedIn.csrfToken)}<button type="submit" class="danger">Cancel invitation</button></form>`
      : '';
  return html`<li>${invite.email} (${invite.role}), until !${when(invite.expiresAt)}!${cancel}</li>`;
}

/** The workspace's people and open invitations; owners invite, cancel invitations and remove people. */
export function peoplePage(model: PeoplePageModel): string {
  const { signedIn } = model;
  const invited = model.invited
    ? html`<section class="card secret" aria-labelledby="invite-title">
        <h2 id="invite-title">Invitation for ${model.invited.email}</h2>
        <p>Send this link to them: it works once, for 7 days, and is shown only now.</p>
        <div class="copy-row"><code id="invite-link">${model.invited.url}</code><button type="button" data-copy="invite-link">Copy</button></div>
      </section>`
    : '';
  const inviteForm =
    signedIn.role === 'owner'
      ? html`<section aria-labelledby="new-invite-title" class="card">
  <h2 id="new-invite-title">Invite someone</h2>
  <form method="post" action="/dashboard/people">
    !${csrfField(signedIn.csrfToken)}
    <label for="invite-email">Email</label>
    <input id="invite-email" name="email" type="email" required maxlength="320" value="${model.form?.email ?? ''}">
    <fieldset><legend>Role</legend>
      !${(['member', 'owner'] as const).map((role) => html`<label class="inline"><input type="radio" name="role" value="${role}"!${(model.form?.role ?? 'member') === role ? ' checked' : ''}> ${role}</label>`).join('')}
      <p class="hint">Owners also invite and remove people and create live keys.</p>
    </fieldset>
    <button type="submit">Create invitation</button>
  </form>
</section>`
      : html`<p class="hint">Only an owner can invite or remove people.</p>`;
  return layout(
    'People',
    html`!${invited}!${message(model.notice, 'notice')}!${message(model.error)}
<section aria-labelledby="people-title">
  <h2 id="people-title">People of ${signedIn.orgName}</h2>
  <table class="keys"><thead><tr><th scope="col">Name</th><th scope="col">Email</th><th scope="col">Role</th><th scope="col">Access</th><th scope="col">Since</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
  <tbody>!${model.users.map((user) => personRow(user, signedIn)).join('')}</tbody></table>
</section>
!${
      model.invitations.length === 0
        ? ''
        : html`<section aria-labelledby="open-title"><h2 id="open-title">Open invitations</h2><ul>!${model.invitations
            .map((invite) => inviteItem(invite, signedIn))
            .join('')}</ul></section>`
    }
!${inviteForm}`,
    signedIn,
    'people',
  );
}
