import { randomBytes } from 'node:crypto';
import { html } from 'ghtml';
import type { ApiKey } from '../../../db/entities/index.ts';
import type { ScopeEntry } from '../auth/scopes.ts';
import { KEY_NAME_MAX } from '../auth/workspace-keys.service.ts';
import type { SignedIn } from './dashboard-auth.service.ts';

/**
 * The dashboard's pages, rendered on the server with ghtml's tagged templates: every `${}` is
 * HTML-escaped, `!${}` only inserts markup these functions built themselves. No inline script
 * or style (the pages' Content-Security-Policy allows only /dashboard/assets/).
 */

/**
 * A form's hidden fields: the session's CSRF token, and a value of its own so that sending the
 * same form twice (a double click, a reload after POST) does what it does once.
 */
export const csrfField = (token: string) =>
  html`<input type="hidden" name="_csrf" value="${token}"><input type="hidden" name="_once" value="${randomBytes(16).toString('base64url')}">`;

/** A message above a form: an error (role=alert, read at once by screen readers) or a notice. */
export const message = (text: string | undefined, kind: 'error' | 'notice' = 'error') =>
  text ? html`<p class="${kind}" role="${kind === 'error' ? 'alert' : 'status'}">${text}</p>` : '';

/** The dashboard's areas, in the navigation's order. */
export const AREAS = [
  ['keys', 'API keys'],
  ['domains', 'Domains'],
  ['streams', 'Streams'],
  ['emails', 'Emails'],
  ['contacts', 'Contacts'],
  ['segments', 'Segments'],
  ['suppressions', 'Suppressions'],
  ['automations', 'Automations'],
  ['templates', 'Templates'],
  ['broadcasts', 'Broadcasts'],
  ['webhooks', 'Webhooks'],
  ['inbox', 'Inbox'],
  ['metrics', 'Metrics'],
  ['people', 'People'],
  ['settings', 'Settings'],
] as const;
export type Area = (typeof AREAS)[number][0];

/** The page frame: header with the workspace, navigation and the sign-out forms when signed in. */
export function layout(title: string, body: string, signedIn?: SignedIn, current?: Area): string {
  const header = signedIn
    ? html`<header class="top">
        <a class="brand" href="/dashboard">Herald</a>
        <span class="workspace" title="Workspace">${signedIn.orgName}</span>
        <nav aria-label="Dashboard">!${AREAS.map(([area, label]) => html`<a href="/dashboard/${area}"!${current === area ? ' aria-current="page"' : ''}>${label}</a>`).join('')}!${signedIn.workflowsUrl ? html`<a href="${signedIn.workflowsUrl}" target="_blank" rel="noopener noreferrer">Workflows (Temporal UI)</a>` : ''}</nav>
        <div class="account">
          <span>${signedIn.name} <small>(${signedIn.role})</small></span>
          <form method="post" action="/dashboard/sign-out">!${csrfField(signedIn.csrfToken)}<button type="submit" class="link">Sign out</button></form>
          <form method="post" action="/dashboard/sign-out-everywhere">!${csrfField(signedIn.csrfToken)}<button type="submit" class="link">Sign out everywhere</button></form>
        </div>
      </header>`
    : html`<header class="top"><a class="brand" href="/dashboard">Herald</a></header>`;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · Herald</title>
<link rel="stylesheet" href="/dashboard/assets/dashboard.css">
!${current === 'metrics' || current === 'broadcasts' ? html`<link rel="stylesheet" href="/dashboard/assets/uplot.css">` : ''}
<script src="/dashboard/assets/dashboard.js" defer></script>
</head>
<body>
<a class="skip-link" href="#main">Skip to content</a>
!${header}
<main id="main" tabindex="-1">
<h1>${title}</h1>
!${body}
</main>
</body>
</html>`;
}

export function signInPage(options: { csrf: string; email?: string; error?: string }): string {
  return layout(
    'Sign in',
    html`!${message(options.error)}
<form method="post" action="/dashboard/sign-in" class="card narrow">
  !${csrfField(options.csrf)}
  <label for="email">Email</label>
  <input id="email" name="email" type="email" autocomplete="username" required maxlength="320" value="${options.email ?? ''}">
  <label for="password">Password</label>
  <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="200">
  <button type="submit">Sign in</button>
</form>
<p class="hint">No account yet? Ask your workspace's owner or operator for an invitation link.</p>`,
  );
}

export function invitePage(options: { csrf: string; orgName: string; email: string; error?: string }): string {
  return layout(
    `Join ${options.orgName}`,
    html`!${message(options.error)}
<form method="post" class="card narrow">
  !${csrfField(options.csrf)}
  <p>You were invited as <strong>${options.email}</strong>. Choose your name and a password to sign in.</p>
  <label for="name">Your name</label>
  <input id="name" name="name" autocomplete="name" required maxlength="200">
  <label for="password">Password <small>(12 characters or more)</small></label>
  <input id="password" name="password" type="password" autocomplete="new-password" required minlength="12" maxlength="200">
  <button type="submit">Join and sign in</button>
</form>`,
  );
}

/** An operator's sign-in link: one button (a GET never signs in, so link scanners cannot use it up). */
export function signInLinkPage(options: { csrf: string; orgName: string; email: string }): string {
  return layout(
    `Sign in to ${options.orgName}`,
    html`<form method="post" class="card narrow">
  !${csrfField(options.csrf)}
  <p>This link signs you in as <strong>${options.email}</strong>, once.</p>
  <button type="submit">Continue</button>
</form>`,
  );
}

/** A page that only says something (404, 429, an expired link). */
export function notePage(title: string, text: string, signedIn?: SignedIn): string {
  return layout(title, html`<p>${text}</p><p><a href="/dashboard">Back to the dashboard</a></p>`, signedIn);
}

/** An instant as `YYYY-MM-DD HH:MM UTC` in a <time> element; a dash for none. */
export const when = (date: Date | null | undefined) =>
  date ? html`<time datetime="${date.toISOString()}">${date.toISOString().slice(0, 16).replace('T', ' ')} UTC</time>` : '—';

function keyRow(key: ApiKey, csrf: string): string {
  const state = key.revokedAt ? 'revoked' : key.expiresAt && key.expiresAt <= new Date() ? 'expired' : 'active';
  return html`<tr>
    <td data-label="Name">${key.name}</td>
    <td data-label="Key"><code>${key.prefix}…</code></td>
    <td data-label="Mode">${key.mode}</td>
    <td data-label="Scopes"><details><summary>${String(key.scopes.length)} scopes</summary><ul class="scopes">!${key.scopes.map((s) => html`<li><code>${s}</code></li>`).join('')}</ul></details></td>
    <td data-label="Created">!${when(key.createdAt)}</td>
    <td data-label="Last used">!${when(key.lastUsedAt)}</td>
    <td data-label="State"><span class="state ${state}">${state}</span></td>
    <td data-label="">!${
      state === 'active'
        ? html`<form method="post" action="/dashboard/keys/${key.id}/revoke" data-confirm="Revoke ${key.name}? Requests with it will be refused within seconds.">!${csrfField(csrf)}<button type="submit" class="danger">Revoke</button></form>`
        : ''
    }</td>
  </tr>`;
}

export interface KeysPageModel {
  signedIn: SignedIn;
  keys: readonly ApiKey[];
  scopes: readonly ScopeEntry[];
  /** A key just created: its secret, shown this once. */
  created?: { name: string; secret: string };
  error?: string;
  /** The create form's values to show again after an error. */
  form?: { name?: string; mode?: string; scopes?: readonly string[] };
}

export function keysPage(model: KeysPageModel): string {
  const { signedIn } = model;
  const chosen = new Set(model.form?.scopes ?? []);
  const created = model.created
    ? html`<section class="card secret" aria-labelledby="secret-title">
        <h2 id="secret-title">Your new key “${model.created.name}”</h2>
        <p>Copy it now: Herald keeps only a hash, so it is shown this once.</p>
        <div class="copy-row"><code id="new-key">${model.created.secret}</code><button type="button" data-copy="new-key">Copy</button></div>
      </section>`
    : '';
  const modes = signedIn.role === 'owner' ? ['test', 'live'] : ['test'];
  return layout(
    'API keys',
    html`!${created}!${message(model.error)}
<section aria-labelledby="list-title">
  <h2 id="list-title">Keys of ${signedIn.orgName}</h2>
  !${
    model.keys.length === 0
      ? html`<div class="empty"><p><strong>No keys yet.</strong> Create one below with the scopes your application needs, then send its first email with <code>POST /api/v1/outbox/emails</code>.</p></div>`
      : html`<table class="keys"><thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Mode</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">State</th><th scope="col"><span class="visually-hidden">Actions</span></th></tr></thead>
      <tbody>!${model.keys.map((key) => keyRow(key, signedIn.csrfToken)).join('')}</tbody></table>`
  }
</section>
<section aria-labelledby="create-title" class="card">
  <h2 id="create-title">Create a key</h2>
  <form method="post" action="/dashboard/keys">
    !${csrfField(signedIn.csrfToken)}
    <label for="key-name">Name</label>
    <input id="key-name" name="name" required maxlength="${String(KEY_NAME_MAX)}" value="${model.form?.name ?? ''}">
    <fieldset><legend>Mode</legend>
      !${modes.map((mode) => html`<label class="inline"><input type="radio" name="mode" value="${mode}"!${(model.form?.mode ?? 'test') === mode ? ' checked' : ''}> ${mode}</label>`).join('')}
      !${signedIn.role === 'owner' ? '' : html`<p class="hint">Only an owner can create live keys.</p>`}
    </fieldset>
    <fieldset><legend>Scopes</legend>
      <ul class="scope-list">!${model.scopes
        .map(
          (scope) =>
            html`<li><label class="inline"><input type="checkbox" name="scopes" value="${scope.id}"!${chosen.has(scope.id) ? ' checked' : ''}> <code>${scope.id}</code></label> <span class="hint">${scope.description}</span></li>`,
        )
        .join('')}</ul>
    </fieldset>
    <button type="submit">Create key</button>
  </form>
</section>`,
    signedIn,
    'keys',
  );
}
