import Mustache from 'mustache';
import { AppError } from '../../errors.ts';

/**
 * Sends from a stored template (`template_id` + `variables` on POST /outbox/emails), rendered
 * with Mustache: logic-less (variables, sections over lists and objects, inverted sections; no
 * partials, no code). In the HTML body `{{name}}` is HTML-escaped and `{{{name}}}` is not; the
 * subject and the text body are plain text and never escaped. Every variable a template uses
 * outside a section must be given: a missing one is a 400 naming `variables.<name>`, so a
 * receipt never goes out with an empty amount. A name used only inside a section resolves
 * against the section's item first and may be absent.
 */

export type TemplateVariables = Record<string, unknown>;

// No parse cache: a request's own subject and text are rendered too, so the cache would grow
// with every distinct one; parsing a template is cheap next to a send.
Mustache.templateCache = undefined;

export interface TemplateSource {
  subject: string;
  html: string;
  text?: string | undefined;
}

type Token = [type: string, value: string, start: number, end: number, children?: Token[]];

const PLAIN = { escape: (value: unknown) => String(value) };

/** The variable names a template needs at its top level (sections and the names inside them are optional). */
export function requiredVariables(template: string): string[] {
  const tokens = Mustache.parse(template) as unknown as Token[];
  return [...new Set(tokens.filter(([type]) => type === 'name' || type === '&').map(([, value]) => value))];
}

/** Whether `path` (`a` or `a.b.c`, Mustache's dotted names; `.` is the current item) resolves to a value. */
function resolves(variables: TemplateVariables, path: string): boolean {
  if (path === '.') return true;
  let current: unknown = variables;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || !(part in current)) return false;
    current = (current as Record<string, unknown>)[part];
  }
  return current !== undefined;
}

function templateError(message: string, reason: string, fields: { path: string; type: string; message: string }[]): AppError {
  return new AppError('invalid_request', message, { reason, fields: fields.map((field) => ({ ...field, location: 'body' })) });
}

/** Parses each part up front, so a template Mustache cannot read is a clear 400 rather than a 500. */
function parseOrRefuse(parts: Record<string, string>): Record<string, string[]> {
  const required: Record<string, string[]> = {};
  for (const [field, template] of Object.entries(parts)) {
    try {
      required[field] = requiredVariables(template);
    } catch (error) {
      throw templateError(
        `The ${field} cannot be rendered: ${error instanceof Error ? error.message : String(error)}.`,
        'TEMPLATE_INVALID',
        [{ path: field === 'html' ? 'template_id' : field, type: 'template_syntax', message: 'is not a valid Mustache template' }],
      );
    }
  }
  return required;
}

/** Renders subject (plain), html (escaped) and text (plain) with `variables`; throws 400 TEMPLATE_VARIABLE_MISSING. */
export function renderTemplate(
  source: TemplateSource,
  variables: TemplateVariables,
): { subject: string; html: string; text: string | undefined } {
  const parts: Record<string, string> = {
    subject: source.subject,
    html: source.html,
    ...(source.text !== undefined ? { text: source.text } : {}),
  };
  const required = parseOrRefuse(parts);
  const missing = [...new Set(Object.values(required).flat())].filter((name) => !resolves(variables, name));
  if (missing.length > 0) {
    throw templateError(
      `The template uses ${missing.map((name) => `{{${name}}}`).join(', ')}, missing from variables.`,
      'TEMPLATE_VARIABLE_MISSING',
      missing.map((name) => ({
        path: `variables.${name}`,
        type: 'required',
        message: 'is used by the template and must be given',
      })),
    );
  }
  return {
    subject: Mustache.render(source.subject, variables, {}, PLAIN)
      .replace(/[\r\n]+/g, ' ')
      .trim(),
    html: Mustache.render(source.html, variables),
    text: source.text === undefined ? undefined : Mustache.render(source.text, variables, {}, PLAIN),
  };
}
