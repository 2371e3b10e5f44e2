import { html } from 'ghtml';
import type { ContactImport } from '../../../db/entities/index.ts';
import { IMPORT_LIMITS } from '../contacts/contact-import.fns.ts';
import type { SignedIn } from './dashboard-auth.service.ts';
import { csrfField, layout, message, when } from './dashboard.pages.ts';

/** How often a running import's page reloads itself, seconds. */
export const IMPORT_RELOAD_SECONDS = 2;

export const isImportRunning = (contactImport: ContactImport) =>
  contactImport.status === 'validating' || contactImport.status === 'importing';

const state = (status: string) => html`<span class="state import-${status}">${status.replace('_', ' ')}</span>`;

function importRow(contactImport: ContactImport): string {
  return html`<tr>
    <th scope="row" data-label="File"><a href="/dashboard/contacts/imports/${contactImport.id}">${contactImport.filename ?? contactImport.id}</a></th>
    <td data-label="Status">!${state(contactImport.status)}</td>
    <td data-label="Rows" class="number">${String(contactImport.rowsDone)}${contactImport.totalRows === null ? '' : ` / ${contactImport.totalRows}`}</td>
    <td data-label="Skipped" class="number">${String(contactImport.skipped)}</td>
    <td data-label="Started">!${when(contactImport.createdAt)}</td>
  </tr>`;
}

/** /dashboard/contacts/imports: the workspace's imports, newest first. */
export function importsPage(model: { signedIn: SignedIn; imports: readonly ContactImport[] }): string {
  return layout(
    'Contact imports',
    html`<p><a href="/dashboard/contacts">← Contacts</a> · <a class="button" href="/dashboard/contacts/imports/new">Import a CSV file</a></p>
<section aria-labelledby="imports-title">
  <h2 id="imports-title">Imports, newest first</h2>
  !${
    model.imports.length === 0
      ? html`<div class="card empty"><p><strong>No imports yet.</strong></p><p><a href="/dashboard/contacts/imports/new">Import a CSV file</a> with an <code>email</code> column to add or update contacts.</p></div>`
      : html`<table class="keys cards"><thead><tr><th scope="col">File</th><th scope="col">Status</th><th scope="col" class="number">Rows</th><th scope="col" class="number">Skipped</th><th scope="col">Started</th></tr></thead>
      <tbody>!${model.imports.map(importRow).join('')}</tbody></table>`
  }
</section>`,
    model.signedIn,
    'contacts',
  );
}

/** /dashboard/contacts/imports/new: the upload form. */
export function newImportPage(model: { signedIn: SignedIn; error?: string }): string {
  return layout(
    'Import contacts',
    html`<p><a href="/dashboard/contacts">← Contacts</a></p>
!${message(model.error)}
<form method="post" action="/dashboard/contacts/imports" enctype="multipart/form-data" class="card">
  !${csrfField(model.signedIn.csrfToken)}
  <label for="import-file">CSV file</label>
  <input id="import-file" name="file" type="file" accept=".csv,text/csv" required>
  <p class="hint">A header row with an <code>email</code> column; <code>first_name</code>, <code>last_name</code>, <code>company</code>,
  <code>tags</code> (separated by <code>;</code>), <code>status</code> and any other column (a custom field) are optional.
  Existing contacts are updated by email. At most ${String(IMPORT_LIMITS.maxBytes / 1024 / 1024)} MB.</p>
  <button type="submit">Upload and import</button>
</form>`,
    model.signedIn,
    'contacts',
  );
}

/** /dashboard/contacts/imports/:id: an import's progress (the page reloads while it runs), its counts and error report. */
export function importPage(model: { signedIn: SignedIn; contactImport: ContactImport }): string {
  const i = model.contactImport;
  const total = i.totalRows ?? 0;
  const fact = (term: string, value: string) => html`<dt>${term}</dt><dd>!${value}</dd>`;
  const progress =
    i.status === 'completed'
      ? html`<progress id="import-progress" max="1" value="1">100%</progress>`
      : total > 0
        ? html`<progress id="import-progress" max="${String(total)}" value="${String(i.rowsDone)}">${String(Math.floor((i.rowsDone / total) * 100))}%</progress>`
        : html`<progress id="import-progress">${i.status === 'failed' ? 'failed' : 'validating'}</progress>`;
  return layout(
    `Import ${i.filename ?? i.id}`,
    html`<p><a href="/dashboard/contacts/imports">← All imports</a></p>
<section aria-labelledby="progress-title" class="card">
  <h2 id="progress-title">Progress</h2>
  <p><label for="import-progress">!${state(i.status)} ${total > 0 ? `${i.rowsDone} of ${total} rows` : ''}</label></p>
  !${progress}
  !${isImportRunning(i) ? html`<p class="hint" role="status">This page reloads every ${String(IMPORT_RELOAD_SECONDS)} seconds until the import ends.</p>` : ''}
  !${i.failure ? html`<p class="error" role="alert">The file was refused: ${i.failure.message}${i.failure.line ? ` (line ${i.failure.line})` : ''}</p>` : ''}
  <dl class="facts">
    !${fact('Created', html`${String(i.created)}`)}
    !${fact('Updated', html`${String(i.updated)}`)}
    !${fact('Unchanged', html`${String(i.unchanged)}`)}
    !${fact('Skipped', html`${String(i.skipped)}`)}
    !${fact('Uploaded', when(i.uploadedAt))}
    !${fact('Finished', when(i.completedAt))}
  </dl>
  !${
    i.skipped > 0
      ? html`<p><a href="/dashboard/contacts/imports/${i.id}/errors.csv" download>Download the error report</a> (${String(i.skipped)} skipped rows, with why).</p>`
      : ''
  }
  !${i.status === 'completed' ? html`<p><a href="/dashboard/contacts">See the contacts</a></p>` : ''}
</section>`,
    model.signedIn,
    'contacts',
  );
}
