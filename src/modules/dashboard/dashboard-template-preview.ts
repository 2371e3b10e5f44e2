import Mustache from 'mustache';
import { html } from 'ghtml';
import { plainTextOf } from '../outbound/message-builder.ts';
import { templateVariableNames } from '../templates/templates.fns.ts';

/**
 * The template editor's preview: a template's subject, preheader and HTML rendered with sample
 * variables (Mustache, as a send renders them), the text part a send would carry (derived from
 * the HTML), and the variables the template uses. The preview is a document of its own, served
 * with PREVIEW_HEADERS and shown in an `<iframe sandbox>`; the HTML body sits in a nested
 * sandboxed `srcdoc` frame inside it, so the template's inline styles show while its scripts,
 * forms and links stay dead.
 */

/** The preview document's headers: inline styles and images (the template's), nothing else; framed only by the dashboard. */
export const PREVIEW_HEADERS = {
  'Content-Security-Policy':
    "default-src 'none'; style-src 'self' 'unsafe-inline'; img-src data: https:; frame-ancestors 'self'; form-action 'none'; base-uri 'none'; sandbox",
  'X-Frame-Options': 'SAMEORIGIN',
};

/** The editor page's policy: the dashboard's, plus frames from this origin (the preview). */
export const EDITOR_CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/** Sample values for the sample-variables box; the person's own email for `email`. */
const SAMPLES: Record<string, string> = {
  first_name: 'Ada',
  last_name: 'Lovelace',
  company: 'Analytical Engines Ltd',
  unsubscribe_url: 'https://example.com/unsubscribe',
};

export interface TemplateParts {
  subject: string;
  previewText: string;
  html: string;
}

export interface RenderedPreview {
  subject: string;
  previewText: string;
  html: string;
  text: string;
  /** Why the preview could not be rendered as asked (bad Mustache, bad sample JSON). */
  problems: string[];
  /** The variables the parts use. */
  variables: { name: string; optional: boolean }[];
}

/** The variables of `parts`, or the Mustache syntax error that stops reading them. */
export function variablesOf(parts: TemplateParts): { variables: { name: string; optional: boolean }[]; syntaxError?: string } {
  try {
    return { variables: templateVariableNames([parts.subject, parts.previewText, parts.html]) };
  } catch (error) {
    return { variables: [], syntaxError: error instanceof Error ? error.message : String(error) };
  }
}

/** Sample variables for a template: known contact fields get plausible values, others `[name]`. */
export function sampleVariables(parts: TemplateParts, email: string): Record<string, unknown> {
  const sample: Record<string, unknown> = {};
  for (const { name, optional } of variablesOf(parts).variables) {
    if (optional && !(name in SAMPLES) && name !== 'email') continue;
    const path = name.split('.');
    let target = sample;
    for (const part of path.slice(0, -1)) target = (target[part] ??= {}) as Record<string, unknown>;
    target[path.at(-1)!] = name === 'email' ? email : (SAMPLES[name] ?? `[${name}]`);
  }
  return sample;
}

const PLAIN = { escape: (value: unknown) => String(value) };

/**
 * Renders `parts` with the sample variables given as JSON text over `defaults` (the given ones
 * win, so a variable added while typing still shows a sample); problems instead of throwing.
 */
export function renderPreview(parts: TemplateParts, variablesJson: string, defaults: Record<string, unknown> = {}): RenderedPreview {
  const problems: string[] = [];
  let variables: Record<string, unknown> = defaults;
  try {
    const parsed: unknown = variablesJson.trim() ? JSON.parse(variablesJson) : {};
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      problems.push('The sample variables must be a JSON object.');
    else variables = { ...defaults, ...(parsed as Record<string, unknown>) };
  } catch (error) {
    problems.push(`The sample variables are not valid JSON (${error instanceof Error ? error.message : String(error)}).`);
  }
  const render = (field: string, template: string, options?: typeof PLAIN) => {
    try {
      return Mustache.render(template, variables, {}, options);
    } catch (error) {
      problems.push(`The ${field} is not a valid Mustache template: ${error instanceof Error ? error.message : String(error)}.`);
      return template;
    }
  };
  const body = render('HTML', parts.html);
  return {
    subject: render('subject', parts.subject, PLAIN).replace(/[\r\n]+/g, ' '),
    previewText: render('preview text', parts.previewText, PLAIN),
    html: body,
    text: body.trim() ? plainTextOf(body) : '',
    problems,
    variables: variablesOf(parts).variables,
  };
}

/** The preview document (inside the editor's sandboxed frame). */
export function previewDocument(preview: RenderedPreview): string {
  return html`<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Preview</title><link rel="stylesheet" href="/dashboard/assets/dashboard.css"></head>
<body class="preview">
!${preview.problems.length > 0 ? html`<ul class="problems" role="alert">!${preview.problems.map((p) => html`<li>${p}</li>`).join('')}</ul>` : ''}
<dl class="facts">
  <dt>Subject</dt><dd id="preview-subject">${preview.subject || '(no subject)'}</dd>
  !${preview.previewText ? html`<dt>Preheader</dt><dd>${preview.previewText}</dd>` : ''}
</dl>
<h2>HTML part</h2>
!${preview.html.trim() ? html`<iframe class="message-html" sandbox referrerpolicy="no-referrer" title="The HTML part rendered with the sample variables" srcdoc="${preview.html}"></iframe>` : html`<p class="hint">No HTML yet.</p>`}
<p class="hint" id="preview-variables">Variables: ${preview.variables.map((v) => `{{${v.name}}}`).join(', ') || 'none'}</p>
<h2>Text part</h2>
<pre class="message-text" id="preview-text">${preview.text || '(empty)'}</pre>
</body>
</html>`;
}
