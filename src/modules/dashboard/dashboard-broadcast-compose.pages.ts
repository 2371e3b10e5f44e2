import { html } from 'ghtml';
import type { Broadcast, Segment, Template } from '../../../db/entities/index.ts';
import { MAX_HTML_LENGTH, MAX_PLAIN_TEXT_LENGTH } from '../broadcasts/broadcasts.schemas.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { BROADCASTS } from './dashboard-broadcasts.pages.ts';
import { storedCountHtml } from './dashboard-segments.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * Composing a broadcast (from a published template or from scratch: segments with their member
 * counts, the audience counted on demand, its message stream and schedule), editing a draft with
 * the same form, and the launch's confirmation page, which says how many people will receive it
 * before anything is sent. Every `${}` is escaped.
 */

export interface ComposeFields {
  name: string;
  subject: string;
  preview_text: string;
  from_name: string;
  from_email: string;
  reply_to: string;
  html: string;
  plain_text: string;
  segment_ids: string[];
  /** The message stream (`broadcast` or a custom stream of the broadcast kind). */
  stream: string;
  /** A `datetime-local` value in UTC, or '' for no schedule. */
  scheduled_at: string;
}

export interface ComposePageModel {
  signedIn: SignedIn;
  fields: ComposeFields;
  problems: Record<string, string>;
  /** The workspace's segments, each with its stored member count (exact for static ones, an estimate with its time for dynamic ones). */
  segments: readonly Segment[];
  templates: readonly Template[];
  templateId?: string | undefined;
  /** The exact audience of the picked segments, when asked for. */
  audience?: number | undefined;
  domains: readonly string[];
  /** The workspace's broadcast-kind streams, by name. */
  streams: readonly string[];
  /** The draft being changed; absent when composing a new one. */
  editing?: Broadcast | undefined;
  error?: string | undefined;
}

function input(model: ComposePageModel, name: keyof ComposeFields, label: string, attrs: string, hint = ''): string {
  const problem = model.problems[name];
  return html`<div class="field"><label for="b-${name}">${label}</label><input id="b-${name}" name="${name}" value="${String(model.fields[name])}"!${attrs}!${problem ? ` aria-invalid="true" aria-describedby="b-${name}-error"` : ''}>!${hint ? html`<p class="hint">${hint}</p>` : ''}!${problem ? html`<p class="error-text" id="b-${name}-error">${problem}</p>` : ''}</div>`;
}

function textarea(model: ComposePageModel, name: 'html' | 'plain_text', label: string, max: number): string {
  const problem = model.problems[name];
  return html`<div class="field"><label for="b-${name}">${label}</label><textarea id="b-${name}" name="${name}" rows="${name === 'html' ? '14' : '6'}" spellcheck="false" maxlength="${String(max)}"!${problem ? ` aria-invalid="true" aria-describedby="b-${name}-error"` : ''}>${model.fields[name]}</textarea>!${problem ? html`<p class="error-text" id="b-${name}-error">${problem}</p>` : ''}</div>`;
}

function segmentPicker(model: ComposePageModel): string {
  const chosen = new Set(model.fields.segment_ids);
  const problem = model.problems.segment_ids;
  return html`<fieldset!${problem ? ' aria-describedby="b-segments-error"' : ''}><legend>Segments</legend>
  !${
    model.segments.length === 0
      ? html`<p>This workspace has no segments yet: create one with <code>POST /api/v1/segments</code> (or on the Contacts pages), then come back.</p>`
      : html`<ul class="scope-list">!${model.segments.map((segment) => html`<li><label class="inline"><input type="checkbox" name="segment_ids" value="${segment.id}"!${chosen.has(segment.id) ? ' checked' : ''}> ${segment.name}</label> <span class="hint">!${storedCountHtml(segment)} contacts (any status)</span></li>`).join('')}</ul>`
  }
  !${problem ? html`<p class="error-text" id="b-segments-error">${problem}</p>` : ''}
  !${model.audience !== undefined ? html`<p class="notice" role="status">The picked segments reach <strong>${model.audience.toLocaleString('en-US')}</strong> people today (active, not suppressed, each once).</p>` : ''}
  <button type="submit" class="secondary" formaction="${model.editing ? `${BROADCASTS}/${model.editing.id}/edit/audience` : `${BROADCASTS}/new/audience`}">Count the audience</button>
</fieldset>`;
}

function streamPicker(model: ComposePageModel): string {
  const problem = model.problems.stream;
  const names = model.streams.includes(model.fields.stream) ? model.streams : [...model.streams, model.fields.stream];
  return html`<div class="field"><label for="b-stream">Message stream</label>
  <select id="b-stream" name="stream" aria-describedby="b-stream-hint!${problem ? ' b-stream-error' : ''}"!${problem ? ' aria-invalid="true"' : ''}>!${names.map((name) => html`<option value="${name}"!${name === model.fields.stream ? ' selected' : ''}>${name}</option>`).join('')}</select>
  <p class="hint" id="b-stream-hint">Unsubscribes through this broadcast hold for this stream; its daily budget paces the send. <a href="/dashboard/streams">Manage streams</a></p>
  !${problem ? html`<p class="error-text" id="b-stream-error">${problem}</p>` : ''}</div>`;
}

function scheduleField(model: ComposePageModel): string {
  const problem = model.problems.scheduled_at;
  return html`<div class="field"><label for="b-scheduled_at">Schedule (optional, UTC)</label>
  <input id="b-scheduled_at" name="scheduled_at" type="datetime-local" value="${model.fields.scheduled_at}" aria-describedby="b-scheduled_at-hint!${problem ? ' b-scheduled_at-error' : ''}"!${problem ? ' aria-invalid="true"' : ''}>
  <p class="hint" id="b-scheduled_at-hint">The time the launch proposes; within the next 30 days. Empty: send when launched.</p>
  !${problem ? html`<p class="error-text" id="b-scheduled_at-error">${problem}</p>` : ''}</div>`;
}

function templatePicker(model: ComposePageModel): string {
  const published = model.templates.filter((t) => t.status === 'published');
  return html`<form method="get" action="${BROADCASTS}/new" class="card filters" aria-label="Start from a template">
  <div><label for="b-template">Start from a template</label>
  <select id="b-template" name="template"><option value="">From scratch</option>!${published.map((t) => html`<option value="${t.id}"!${t.id === model.templateId ? ' selected' : ''}>${t.name} (v${String(t.version)})</option>`).join('')}</select></div>
  <div class="filter-actions"><button type="submit" class="secondary">Use it</button></div>
  !${published.length === 0 ? html`<p class="hint">No published template yet: <a href="/dashboard/templates">write one</a>, or compose from scratch below.</p>` : ''}
</form>`;
}

export function composePage(model: ComposePageModel): string {
  const { signedIn, editing } = model;
  return layout(
    editing ? `Edit ${editing.name}` : 'New broadcast',
    html`!${message(model.error)}
<p><a href="${BROADCASTS}">All broadcasts</a>!${editing ? html` · <a href="${BROADCASTS}/${editing.id}">Back to the draft</a>` : ''}</p>
!${editing ? '' : templatePicker(model)}
<form method="post" action="${editing ? `${BROADCASTS}/${editing.id}/edit` : BROADCASTS}" class="editor card">
  !${csrfField(signedIn.csrfToken)}
  !${input(model, 'name', 'Name', ' required maxlength="200"', 'For you; recipients do not see it.')}
  !${input(model, 'subject', 'Subject', ' required maxlength="500"', 'Variables such as {{first_name}} are filled from each contact.')}
  !${input(model, 'preview_text', 'Preheader', ' maxlength="200"')}
  <div class="step-fields">
  !${input(model, 'from_name', 'From name', ' required maxlength="100"')}
  !${input(model, 'from_email', 'From address', ' type="email" required maxlength="320" list="b-domains"', model.domains.length > 0 ? `On a domain of this workspace: ${model.domains.join(', ')}.` : 'Add a sending domain first (Domains).')}
  !${input(model, 'reply_to', 'Reply-To (optional)', ' type="email" maxlength="320"')}
  </div>
  <datalist id="b-domains">!${model.domains.map((d) => html`<option value="news@${d}">`).join('')}</datalist>
  !${segmentPicker(model)}
  <div class="step-fields">
  !${streamPicker(model)}
  !${scheduleField(model)}
  </div>
  !${textarea(model, 'html', 'HTML', MAX_HTML_LENGTH)}
  !${textarea(model, 'plain_text', 'Text part (optional)', MAX_PLAIN_TEXT_LENGTH)}
  <p class="hint">Each message gets an unsubscribe link and your postal address in its footer, and List-Unsubscribe headers.</p>
  <div class="editor-actions"><button type="submit">!${editing ? 'Save changes' : 'Save draft'}</button></div>
</form>`,
    signedIn,
    'broadcasts',
  );
}

export interface LaunchPageModel {
  signedIn: SignedIn;
  broadcast: Broadcast;
  audience: number;
  segments: readonly Segment[];
  /** A `datetime-local` value (UTC) to show again after an error. */
  at?: string | undefined;
  error?: string | undefined;
}

export function launchPage(model: LaunchPageModel): string {
  const { broadcast: b, signedIn } = model;
  const people = `${model.audience.toLocaleString('en-US')} ${model.audience === 1 ? 'person' : 'people'}`;
  return layout(
    `Send ${b.name}?`,
    html`!${message(model.error)}
<section class="card" aria-labelledby="confirm-title">
  <h2 id="confirm-title">This broadcast will reach <strong id="audience-size">${people}</strong></h2>
  <p class="hint">Counted now: contacts of the segments that are active and not suppressed, each once. The send takes the audience again when it starts, so contacts added before then are included.</p>
  <dl class="facts">
    <dt>Subject</dt><dd>${b.subject}</dd>
    <dt>From</dt><dd>${b.fromName} &lt;${b.fromEmail}&gt;</dd>
    <dt>Segments</dt><dd>${model.segments.map((s) => s.name).join(', ')}</dd>
    <dt>Stream</dt><dd>${b.stream}</dd>
    !${b.scheduledAt ? html`<dt>Draft's schedule</dt><dd>!${when(b.scheduledAt)}</dd>` : ''}
  </dl>
  !${signedIn.role === 'owner' ? '' : html`<p class="notice">As a member you send as with a test key: every message goes to the sandbox, none to the contacts.</p>`}
  <form method="post" action="${BROADCASTS}/${b.id}/launch">
    !${csrfField(signedIn.csrfToken)}
    <fieldset><legend>When</legend>
      <label class="inline"><input type="radio" name="when" value="now"!${model.at ? '' : ' checked'}> Now</label>
      <label class="inline"><input type="radio" name="when" value="later"!${model.at ? ' checked' : ''}> At</label>
      <label for="launch-at" class="visually-hidden">Send at (UTC)</label>
      <input id="launch-at" name="at" type="datetime-local" value="${model.at ?? ''}" aria-describedby="launch-at-hint">
      <p class="hint" id="launch-at-hint">In UTC, within the next 30 days.</p>
    </fieldset>
    <fieldset><legend>Tracking</legend>
      <label class="inline"><input type="checkbox" name="track_opens" value="on" checked> Track opens</label>
      <label class="inline"><input type="checkbox" name="track_clicks" value="on" checked> Track clicks</label>
      <p class="hint">Opens: a 1-pixel image in each message. Clicks: links go through Herald's redirect first.</p>
    </fieldset>
    <div class="editor-actions"><button type="submit">Send to ${people}</button> <a href="${BROADCASTS}/${b.id}">Not now</a></div>
  </form>
</section>`,
    signedIn,
    'broadcasts',
  );
}
