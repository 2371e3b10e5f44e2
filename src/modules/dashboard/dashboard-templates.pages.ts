import { html } from 'ghtml';
import type { Template } from '../../../db/entities/index.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { olderLink } from './dashboard-webhooks.pages.ts';
import { layout, when } from './dashboard.pages.ts';

/**
 * The templates list: name, subject, folder, status and version, newest first; a folder filter
 * (the templates' `folder_id` labels, applied by the query, so older pages stay in the folder); an empty state that says how to start. Every `${}` is
 * escaped (names and subjects are the workspace's text).
 */

const BASE = '/dashboard/templates';

export const stateBadge = (state: string) => html`<span class="state ${state}">${state}</span>`;

export interface TemplatesPageModel {
  signedIn: SignedIn;
  templates: readonly Template[];
  /** The workspace's folder labels, for the filter (the list itself is filtered by the query's `folder`). */
  folders: readonly string[];
  folder?: string | undefined;
  older?: string | undefined;
}

function templateRow(template: Template, orgId: string): string {
  return html`<tr>
    <th scope="row" data-label="Name"><a href="${BASE}/${template.id}">${template.name}</a>!${template.orgId === orgId ? '' : html` <span class="hint">(shared with you)</span>`}</th>
    <td data-label="Subject">${template.subject || '—'}</td>
    <td data-label="Folder">!${template.folderId ? html`<a href="${BASE}?folder=${encodeURIComponent(template.folderId)}">${template.folderId}</a>` : '—'}</td>
    <td data-label="Status">!${stateBadge(template.status)}</td>
    <td data-label="Version">v${String(template.version)}</td>
    <td data-label="Updated">!${when(template.updatedAt)}</td>
  </tr>`;
}

export function templatesPage(model: TemplatesPageModel): string {
  const { signedIn } = model;
  const folders =
    model.folders.length > 0 || model.folder
      ? html`<nav class="periods" aria-label="Folders"><a href="${BASE}"!${model.folder ? '' : ' aria-current="page"'}>All folders</a>!${[
          ...new Set([...model.folders, ...(model.folder ? [model.folder] : [])]),
        ]
          .sort()
          .map(
            (folder) =>
              html`<a href="${BASE}?folder=${encodeURIComponent(folder)}"!${folder === model.folder ? ' aria-current="page"' : ''}>${folder}</a>`,
          )
          .join('')}</nav>`
      : '';
  const empty = model.folder
    ? html`<p>No templates in the folder “${model.folder}”. <a href="${BASE}">Show every folder</a>.</p>`
    : html`<div class="card empty"><p><strong>No templates yet.</strong> A template is a reusable subject and HTML body with <code>{{variables}}</code>; publish it to send it with the API (<code>template_id</code>) or to start a broadcast from it.</p>
      <p><a class="button" href="${BASE}/new">Write your first template</a></p></div>`;
  return layout(
    'Templates',
    html`<p class="editor-actions"><a class="button" href="${BASE}/new">New template</a></p>
!${folders}
<section aria-labelledby="templates-title">
  <h2 id="templates-title">Templates of ${signedIn.orgName}</h2>
  !${
    model.templates.length === 0
      ? empty
      : html`<table class="keys cards"><thead><tr><th scope="col">Name</th><th scope="col">Subject</th><th scope="col">Folder</th><th scope="col">Status</th><th scope="col">Version</th><th scope="col">Updated</th></tr></thead>
      <tbody>!${model.templates.map((t) => templateRow(t, signedIn.orgId)).join('')}</tbody></table>`
  }
  !${model.older ? olderLink(BASE, { folder: model.folder, older: model.older }, 'Older templates') : ''}
</section>`,
    signedIn,
    'templates',
  );
}
