import { isError } from './dashboard-kit.router.ts';
/**
 * The automation editor's forms (dashboard-automations.routes.ts): the starter definition, the
 * editor's own body parser and its fields in order, the definition a form sends (its JSON view
 * or the builder's fields), the problems a refused definition came back with, and the choices
 * the builder's selects offer from the workspace.
 */
import type { Next } from 'koa';
import { koaBody } from 'koa-body';
import type { ApiServices } from '../../api-composition.ts';
import type { BuilderChoices, Problem } from './dashboard-automation-editor.pages.ts';
import { assembleDefinition } from './dashboard-automations.builder.ts';
import type { DashboardContext } from './dashboard-kit.router.ts';

/** The most the choices of a builder's select list (the newest). */
const CHOICES_LIMIT = 200;

/** What a new automation starts from: its trigger and one send step to fill in. */
export const STARTER_DEFINITION = {
  trigger: { type: 'contact.created' },
  reentry: { mode: 'once' },
  timezone: 'UTC',
  start: 'send-1',
  steps: [{ id: 'send-1', type: 'send_email' }],
};

export const pretty = (value: unknown) => JSON.stringify(value, null, 2);
/** A textarea's text as the form sent it (CRLF line breaks) compared as the page wrote it. */
const normalized = (text: string) => text.replace(/\r\n?/g, '\n').trim();

/** The problems a refused definition came back with, paths as in the definition (`steps.2.from`). */
export function problemsOf(error: unknown): Problem[] | null {
  if (!isError(error, 'invalid_request') || error.details?.reason !== 'DEFINITION_INVALID') return null;
  const fields = (error.details.fields ?? []) as { path: string; message: string }[];
  return fields.map((f) => ({ path: f.path.replace(/^definition\./, ''), message: f.message }));
}

/** The editor's form: the builder's fields make a large form (up to 100 steps), parsed in order from the raw body. */
export type EditorFields = readonly (readonly [string, string])[];

/**
 * The definition an editor form sends: its JSON view when the person changed it (or the
 * builder could not show the definition), else what the builder's fields describe.
 */
export function sentDefinition(fields: EditorFields): { definition: unknown; json: string | null; problem?: Problem } {
  const value = (name: string) => fields.find(([key]) => key === name)?.[1] ?? '';
  const text = normalized(value('definition'));
  const base = normalized(value('base'));
  if (base !== '' && text === base) return { definition: assembleDefinition(fields), json: null };
  try {
    return { definition: JSON.parse(text) as unknown, json: null };
  } catch (error) {
    // The builder as it was sent; the JSON view keeps the text to fix.
    return {
      definition: base === '' ? undefined : assembleDefinition(fields),
      json: value('definition'),
      problem: { path: '(definition)', message: `is not valid JSON: ${(error as Error).message}` },
    };
  }
}

/** The editor's own parser: a larger limit than the other forms, the raw body kept for the fields' order. */
export function createEditorForms() {
  return koaBody({
    urlencoded: true,
    json: false,
    text: false,
    multipart: false,
    formLimit: '512kb',
    includeUnparsed: true,
    queryString: { allowDots: false, parameterLimit: 10_000 },
  }) as unknown as (ctx: DashboardContext, next: Next) => Promise<void>;
}

/** The editor form's fields, in the order they were sent. */
export function editorFields(ctx: DashboardContext): EditorFields {
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  return [...new URLSearchParams(typeof raw === 'string' ? raw : '')];
}

/** What the builder's selects offer, read from the workspace through the services the API uses. */
export function createBuilderChoices({
  templates,
  segments,
  webhooks,
  domains,
}: Pick<ApiServices, 'templates' | 'segments' | 'webhooks' | 'domains'>) {
  return async function choicesOf(orgId: string): Promise<BuilderChoices> {
    const [templatePage, segmentPage, endpointPage, domainList] = await Promise.all([
      templates.listTemplates(orgId, { limit: CHOICES_LIMIT }),
      segments.listSegments(orgId, { limit: CHOICES_LIMIT }),
      webhooks.listWebhooks(orgId, { limit: CHOICES_LIMIT }),
      domains.listWorkspaceDomains(orgId),
    ]);
    return {
      // A send step needs the workspace's own published template.
      templates: templatePage.items
        .filter((t) => t.orgId === orgId && t.status === 'published')
        .map((t) => ({ value: t.id, label: t.name })),
      segments: segmentPage.items.map((s) => ({ value: s.id, label: s.name })),
      endpoints: endpointPage.items.map((w) => ({ value: w.id, label: w.name })),
      domains: domainList.filter((d) => d.domain.status === 'verified').map((d) => d.domain.domain),
    };
  };
}
