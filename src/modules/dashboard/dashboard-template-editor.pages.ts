import { html } from 'ghtml';
import { TEMPLATE_CATEGORIES, type Template, type User } from '../../../db/entities/index.ts';
import { TEMPLATE_LIMITS } from '../templates/templates.schemas.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { stateBadge } from './dashboard-templates.pages.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/**
 * The template editor: name, subject, preheader, folder, category and HTML, with problems shown
 * next to their field; a preview frame (the sandboxed preview document, refreshed by the Preview
 * button, and as you type by assets/template-editor.js); the variables the template uses; the
 * sample variables (JSON) the preview renders with; publish; a test send to one of the
 * workspace's people. Nothing the workspace wrote is inlined unescaped.
 */

const BASE = '/dashboard/templates';

export interface TemplateFields {
  name: string;
  subject: string;
  preview_text: string;
  html: string;
  folder_id: string;
  category: string;
}

export interface TemplateEditorModel {
  signedIn: SignedIn;
  /** The saved template; undefined for a new one. */
  template?: Template | undefined;
  fields: TemplateFields;
  /** Problems by field name (`name`, `subject`, `html`, …). */
  problems: Record<string, string>;
  variables: readonly { name: string; optional: boolean }[];
  sampleJson: string;
  people: readonly User[];
  error?: string | undefined;
  notice?: string | undefined;
}

export const fieldsOf = (t: Template): TemplateFields => ({
  name: t.name,
  subject: t.subject,
  preview_text: t.previewText,
  html: t.html,
  folder_id: t.folderId ?? '',
  category: t.category,
});

function field(model: TemplateEditorModel, name: keyof TemplateFields, label: string, input: string, hint = ''): string {
  const problem = model.problems[name];
  return html`<div class="field"><label for="t-${name}">${label}</label>!${input}!${hint ? html`<p class="hint" id="t-${name}-hint">${hint}</p>` : ''}!${problem ? html`<p class="error-text" id="t-${name}-error">${problem}</p>` : ''}</div>`;
}

const described = (model: TemplateEditorModel, name: string, hint: boolean) => {
  const ids = [hint ? `t-${name}-hint` : '', model.problems[name] ? `t-${name}-error` : ''].filter(Boolean).join(' ');
  return `${ids ? ` aria-describedby="${ids}"` : ''}${model.problems[name] ? ' aria-invalid="true"' : ''}`;
};

function editorForm(model: TemplateEditorModel): string {
  const { fields, template, signedIn } = model;
  const action = template ? `${BASE}/${template.id}` : BASE;
  const readOnly = template !== undefined && template.orgId !== signedIn.orgId;
  return html`<form method="post" action="${action}" class="editor" id="template-form" data-preview-form>
  !${csrfField(signedIn.csrfToken)}
  !${field(model, 'name', 'Name', html`<input id="t-name" name="name" required maxlength="${String(TEMPLATE_LIMITS.name)}" value="${fields.name}"!${described(model, 'name', false)}>`)}
  !${field(model, 'subject', 'Subject', html`<input id="t-subject" name="subject" maxlength="${String(TEMPLATE_LIMITS.subject)}" value="${fields.subject}"!${described(model, 'subject', true)}>`, 'One line; {{variables}} allowed.')}
  !${field(model, 'preview_text', 'Preheader', html`<input id="t-preview_text" name="preview_text" maxlength="${String(TEMPLATE_LIMITS.previewText)}" value="${fields.preview_text}"!${described(model, 'preview_text', true)}>`, 'Shown after the subject in most inboxes.')}
  <div class="step-fields">
  !${field(model, 'folder_id', 'Folder', html`<input id="t-folder_id" name="folder_id" maxlength="${String(TEMPLATE_LIMITS.folderId)}" value="${fields.folder_id}"!${described(model, 'folder_id', true)}>`, 'A label to group templates; empty for none.')}
  !${field(model, 'category', 'Category', html`<select id="t-category" name="category">!${TEMPLATE_CATEGORIES.map((c) => html`<option value="${c}"!${c === fields.category ? ' selected' : ''}>${c}</option>`).join('')}</select>`)}
  </div>
  !${field(model, 'html', 'HTML', html`<textarea id="t-html" name="html" rows="16" spellcheck="false" maxlength="${String(TEMPLATE_LIMITS.html)}"!${described(model, 'html', true)}>${fields.html}</textarea>`, 'Mustache: {{name}} is escaped, {{{name}}} is not; {{#name}}…{{/name}} shows when name is set, {{^name}}…{{/name}} when it is not.')}
  <div class="field"><label for="t-variables">Sample variables (JSON)</label>
  <textarea id="t-variables" name="variables" rows="5" spellcheck="false" maxlength="20000" aria-describedby="t-variables-hint">${model.sampleJson}</textarea>
  <p class="hint" id="t-variables-hint">A JSON object, e.g. {"first_name": "Grace"}; variables it leaves out get a sample value. Only for the preview; not saved.</p></div>
  <div class="editor-actions">
    !${readOnly ? html`<p class="hint">Shared with this workspace by its owner: read only.</p>` : html`<button type="submit">${template ? 'Save' : 'Create template'}</button>`}
    <button type="submit" class="secondary" formaction="${BASE}/preview" formtarget="template-preview" data-preview-button>Preview</button>
  </div>
</form>`;
}

function variablesList(model: TemplateEditorModel): string {
  if (model.variables.length === 0) return html`<p class="hint">This template uses no variables.</p>`;
  return html`<ul class="variables">!${model.variables.map((v) => html`<li><code>{{${v.name}}}</code>!${v.optional ? html` <span class="hint">(section: optional)</span>` : ''}</li>`).join('')}</ul>
  <p class="hint">A send must give every variable not marked optional; a broadcast fills <code>email</code>, <code>first_name</code>, <code>last_name</code>, <code>company</code>, custom fields and <code>unsubscribe_url</code> from each contact.</p>`;
}

function sidePanels(model: TemplateEditorModel, template: Template): string {
  const { signedIn } = model;
  const own = template.orgId === signedIn.orgId;
  return html`<section class="card" aria-labelledby="publish-title">
  <h2 id="publish-title">Status</h2>
  <p>!${stateBadge(template.status)} version ${String(template.version)}, saved !${when(template.updatedAt)}</p>
  !${
    own && template.status !== 'published'
      ? html`<form method="post" action="${BASE}/${template.id}/publish" class="inline-form">!${csrfField(signedIn.csrfToken)}<button type="submit">Publish</button></form>
      <p class="hint">Only a published template can be sent with the API or used by a broadcast. Publishing is a change, so it makes a new version, as the API counts them.</p>`
      : ''
  }
  !${template.status === 'published' ? html`<p><a href="/dashboard/broadcasts/new?template=${template.id}">Start a broadcast from this template</a></p>` : ''}
</section>
<section class="card" aria-labelledby="test-title">
  <h2 id="test-title">Send a test</h2>
  <form method="post" action="${BASE}/${template.id}/test">
    !${csrfField(signedIn.csrfToken)}
    <label for="test-to">To</label>
    <select id="test-to" name="user_id">!${model.people.map((p) => html`<option value="${p.id}"!${p.id === signedIn.userId ? ' selected' : ''}>${p.name} &lt;${p.email}&gt;</option>`).join('')}</select>
    <label for="test-from">From</label>
    <input id="test-from" name="from" type="email" required maxlength="320" placeholder="test@your-domain.example" aria-describedby="test-from-hint">
    <p class="hint" id="test-from-hint">An address on a verified domain of this workspace. The saved version is sent, rendered with the sample variables, subject prefixed with [Test]. !${signedIn.role === 'owner' ? 'It is sent for real, as with a live key.' : 'As a member you send as with a test key: the message stays in the sandbox (see Emails).'}</p>
    <button type="submit" class="secondary">Send test</button>
  </form>
</section>`;
}

export function templateEditorPage(model: TemplateEditorModel): string {
  const { template } = model;
  const previewSrc = template ? `${BASE}/${template.id}/preview` : `${BASE}/preview`;
  return layout(
    template ? template.name : 'New template',
    html`!${message(model.error)}!${message(model.notice, 'notice')}
<p><a href="${BASE}">All templates</a></p>
<div class="views">
  <div>!${editorForm(model)}</div>
  <div>
    <section class="card" aria-labelledby="preview-title">
      <h2 id="preview-title">Preview</h2>
      <iframe name="template-preview" class="template-preview" sandbox title="Preview of the template with the sample variables" src="${previewSrc}"></iframe>
    </section>
    <section class="card" aria-labelledby="variables-title"><h2 id="variables-title">Variables</h2>!${variablesList(model)}</section>
    !${template ? sidePanels(model, template) : ''}
  </div>
</div>
<script src="/dashboard/assets/template-editor.js" defer></script>`,
    model.signedIn,
    'templates',
  );
}
