import { html } from 'ghtml';
import { STREAM_KINDS } from '../../../db/entities/index.ts';
import type { StreamView } from '../streams/streams.serializer.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The message streams pages (/dashboard/streams): the built-in and custom streams with what each
 * accepted today against its daily budget, creating a custom stream, and a stream's page to
 * change its description and budget or delete it. Every `${}` is escaped.
 */

export const STREAMS = '/dashboard/streams';
const count = (n: number) => n.toLocaleString('en-US');

/** A stream form's values as typed (shown again after a refusal). */
export interface StreamForm {
  name: string;
  kind: string;
  description: string;
  daily_cap: string;
}

export interface StreamsPageModel {
  signedIn: SignedIn;
  streams: readonly StreamView[];
  form?: StreamForm | undefined;
  problems?: Record<string, string> | undefined;
  notice?: string | undefined;
  error?: string | undefined;
}

function usage(stream: StreamView): string {
  if (stream.dailyCap === null) return html`${count(stream.sentToday)} <span class="hint">(no budget)</span>`;
  const share = Math.min(100, Math.round((stream.sentToday / stream.dailyCap) * 100));
  return html`${count(stream.sentToday)} of ${count(stream.dailyCap)} <meter min="0" max="${String(stream.dailyCap)}" value="${String(Math.min(stream.sentToday, stream.dailyCap))}" aria-label="${`${share}% of the daily budget used`}"></meter>`;
}

function field(problems: Record<string, string> | undefined, name: string, label: string, control: string, hint = ''): string {
  const problem = problems?.[name];
  return html`<div class="field"><label for="s-${name}">${label}</label>!${control}!${hint ? html`<p class="hint">${hint}</p>` : ''}!${problem ? html`<p class="error-text" id="s-${name}-error">${problem}</p>` : ''}</div>`;
}

const invalid = (problems: Record<string, string> | undefined, name: string) =>
  problems?.[name] ? ` aria-invalid="true" aria-describedby="s-${name}-error"` : '';

function createForm(model: StreamsPageModel): string {
  const f = model.form ?? { name: '', kind: 'broadcast', description: '', daily_cap: '' };
  const p = model.problems;
  return html`<form method="post" action="${STREAMS}" class="card editor" aria-labelledby="create-title">
  <h2 id="create-title">Create a stream</h2>
  !${csrfField(model.signedIn.csrfToken)}
  <div class="step-fields">
  !${field(p, 'name', 'Name', html`<input id="s-name" name="name" required maxlength="64" value="${f.name}"!${invalid(p, 'name')}>`, 'Lower-case letters, digits, _ and -; sends name it in their stream field.')}
  !${field(p, 'kind', 'Kind', html`<select id="s-kind" name="kind"!${invalid(p, 'kind')}>!${STREAM_KINDS.map((k) => html`<option value="${k}"!${f.kind === k ? ' selected' : ''}>${k}</option>`).join('')}</select>`, 'Transactional mail is claimed first and is not blocked by broadcast unsubscribes.')}
  !${field(p, 'daily_cap', 'Daily budget (optional)', html`<input id="s-daily_cap" name="daily_cap" type="number" min="1" step="1" inputmode="numeric" value="${f.daily_cap}"!${invalid(p, 'daily_cap')}>`, 'Recipients per UTC day; empty for none.')}
  </div>
  !${field(p, 'description', 'Description (optional)', html`<input id="s-description" name="description" maxlength="500" value="${f.description}"!${invalid(p, 'description')}>`)}
  <div class="editor-actions"><button type="submit">Create stream</button></div>
</form>`;
}

/** /dashboard/streams: every stream with today's sends against its budget, and the create form. */
export function streamsPage(model: StreamsPageModel): string {
  const custom = model.streams.filter((s) => !s.builtIn);
  const rows = model.streams.map(
    (s) => html`<tr>
      <th scope="row" data-label="Stream"><a href="${STREAMS}/${s.name}">${s.name}</a>!${s.builtIn ? html` <span class="state">built-in</span>` : ''}</th>
      <td data-label="Kind">${s.kind}</td>
      <td data-label="Description">${s.description || '—'}</td>
      <td data-label="Today">!${usage(s)}</td>
    </tr>`,
  );
  return layout(
    'Message streams',
    html`!${message(model.notice, 'notice')}!${message(model.error)}
<section aria-labelledby="streams-title">
  <h2 id="streams-title">Streams of ${model.signedIn.orgName}</h2>
  <p class="hint">Every email belongs to a stream: <code>transactional</code> unless a send names another, <code>broadcast</code> for broadcasts and automations. A stream has its own unsubscribes and an optional daily budget (today is the current UTC day).</p>
  <table class="keys cards"><thead><tr><th scope="col">Stream</th><th scope="col">Kind</th><th scope="col">Description</th><th scope="col">Sent today</th></tr></thead>
  <tbody>!${rows.join('')}</tbody></table>
  !${custom.length === 0 ? html`<div class="card empty" id="no-custom-streams"><p><strong>No custom streams yet.</strong> Create one below to give a kind of mail (product news, alerts) its own unsubscribes and daily budget, then name it in a send's <code>stream</code> field or pick it for a broadcast.</p></div>` : ''}
</section>
!${createForm(model)}`,
    model.signedIn,
    'streams',
  );
}

export interface StreamPageModel {
  signedIn: SignedIn;
  stream: StreamView;
  form?: { description: string; daily_cap: string } | undefined;
  problems?: Record<string, string> | undefined;
  notice?: string | undefined;
  error?: string | undefined;
}

/** /dashboard/streams/{name}: a stream's budget and description, changed here; a custom one deleted here. */
export function streamPage(model: StreamPageModel): string {
  const { stream: s, signedIn } = model;
  const f = model.form ?? { description: s.description, daily_cap: s.dailyCap === null ? '' : String(s.dailyCap) };
  const p = model.problems;
  return layout(
    `Stream ${s.name}`,
    html`!${message(model.notice, 'notice')}!${message(model.error)}
<p><a href="${STREAMS}">All streams</a></p>
<section class="card" aria-labelledby="facts-title">
  <h2 id="facts-title">!${s.builtIn ? 'Built-in stream' : 'Custom stream'}</h2>
  <dl class="facts">
    <dt>Kind</dt><dd>${s.kind}</dd>
    <dt>Sent today</dt><dd>!${usage(s)}</dd>
    !${s.createdAt ? html`<dt>Created</dt><dd>!${when(s.createdAt)}</dd>` : ''}
  </dl>
</section>
<form method="post" action="${STREAMS}/${s.name}" class="card editor" aria-labelledby="edit-title">
  <h2 id="edit-title">Budget and description</h2>
  !${csrfField(signedIn.csrfToken)}
  !${field(p, 'daily_cap', 'Daily budget', html`<input id="s-daily_cap" name="daily_cap" type="number" min="1" step="1" inputmode="numeric" value="${f.daily_cap}"!${invalid(p, 'daily_cap')}>`, 'Recipients per UTC day; empty for none. Past it, sends in this stream are refused (429) and broadcasts wait for the next day.')}
  !${field(p, 'description', 'Description', html`<input id="s-description" name="description" maxlength="500" value="${f.description}"!${invalid(p, 'description')}>`)}
  <div class="editor-actions"><button type="submit">Save</button></div>
</form>
!${
      s.builtIn
        ? html`<p class="hint">Built-in streams cannot be deleted.</p>`
        : html`<form method="post" action="${STREAMS}/${s.name}/delete" class="card" data-confirm="Delete the stream ${s.name}? Sends naming it will be refused.">
  !${csrfField(signedIn.csrfToken)}<p>Deleting it refuses later sends and broadcast launches that name it (422); emails already accepted keep its name.</p>
  <button type="submit" class="danger">Delete stream</button></form>`
    }`,
    signedIn,
    'streams',
  );
}
