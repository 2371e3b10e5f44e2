import * as v from 'valibot';
import type { Template } from '../../../db/entities/index.ts';
import type { ApiServices } from '../../api-composition.ts';
import type { DashboardAuthService } from './dashboard-auth.service.ts';
import { CreateTemplateBody, UpdateTemplateBody } from '../templates/templates.schemas.ts';
import { fieldsOf, templateEditorPage, type TemplateEditorModel, type TemplateFields } from './dashboard-template-editor.pages.ts';
import { EDITOR_CSP, PREVIEW_HEADERS, previewDocument, renderPreview, sampleVariables, variablesOf } from './dashboard-template-preview.ts';
import { templatesPage } from './dashboard-templates.pages.ts';
import { sendTemplateTest } from './dashboard-template-test.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import {
  orNotFound,
  urlencodedForms,
  isError,
  form,
  one,
  type DashboardArea,
  type DashboardContext,
  type DashboardKit,
} from './dashboard-kit.router.ts';

const PAGE_SIZE = 100;
const ID = /^[0-9a-fA-F]{24}$/;
const BASE = '/dashboard/templates';

/** The editor's fields from a posted form (trimmed as the API's schema trims the name). */
function postedFields(ctx: DashboardContext): TemplateFields {
  const f = form(ctx);
  return {
    name: one(f.name),
    subject: one(f.subject),
    preview_text: one(f.preview_text),
    html: one(f.html),
    folder_id: one(f.folder_id).trim(),
    category: one(f.category) || 'other',
  };
}

/** The API's body for the fields, validated by the API's own schema; problems by field. */
function parseFields(fields: TemplateFields, schema: typeof CreateTemplateBody | typeof UpdateTemplateBody) {
  const body = { ...fields, folder_id: fields.folder_id === '' ? null : fields.folder_id };
  const parsed = v.safeParse(schema, body);
  if (parsed.success) return { input: parsed.output, problems: {} };
  const problems: Record<string, string> = {};
  for (const issue of parsed.issues) problems[v.getDotPath(issue) ?? 'name'] ??= issue.message;
  return { input: null, problems };
}

const partsOf = (fields: Pick<TemplateFields, 'subject' | 'preview_text' | 'html'>) => ({
  subject: fields.subject,
  previewText: fields.preview_text,
  html: fields.html,
});

/** What the templates routes share: the form parser, the workspace's template of a request, the editor and the preview. */
function createTemplateViews(services: ApiServices, kit: DashboardKit, deps: { auth: DashboardAuthService }) {
  const { templates } = services;
  // A template's HTML may be 500,000 characters (the API's limit): more than the dashboard's usual 64 kB forms.
  const forms = urlencodedForms('4mb');
  async function templateOf(ctx: DashboardContext): Promise<Template | null> {
    const id = (ctx.params as { id?: string }).id ?? '';
    if (!ID.test(id)) return null;
    return orNotFound(templates.getTemplate(kit.signedInOf(ctx).orgId, id.toLowerCase()));
  }

  async function renderEditor(ctx: DashboardContext, status: number, model: Partial<TemplateEditorModel> & { fields: TemplateFields }) {
    const signedIn = kit.signedInOf(ctx);
    const parts = partsOf(model.fields);
    const { variables, syntaxError } = variablesOf(parts);
    const { users } = await deps.auth.people(signedIn.orgId);
    const problems = { ...(syntaxError ? { html: `Not a valid Mustache template: ${syntaxError}` } : {}), ...model.problems };
    const sample = sampleVariables(parts, signedIn.email);
    const sampleJson = one(form(ctx).variables) || (Object.keys(sample).length > 0 ? JSON.stringify(sample, null, 2) : '');
    kit.send(ctx, status, templateEditorPage({ signedIn, variables, sampleJson, people: users, ...model, problems }));
    ctx.set('Content-Security-Policy', EDITOR_CSP);
  }

  function sendPreview(ctx: DashboardContext, fields: Pick<TemplateFields, 'subject' | 'preview_text' | 'html'>, variables: string) {
    const parts = partsOf(fields);
    kit.send(ctx, 200, previewDocument(renderPreview(parts, variables, sampleVariables(parts, kit.signedInOf(ctx).email))));
    ctx.set(PREVIEW_HEADERS);
  }

  return { forms, templateOf, renderEditor, sendPreview };
}

type TemplateViews = ReturnType<typeof createTemplateViews>;
type Router = Parameters<DashboardArea>[0];

/**
 * The templates pages of the dashboard (/dashboard/templates): the list with a folder filter, the
 * editor (create, save: every change is a new version, publish), a live preview in a sandboxed
 * frame, and a test send to one of the workspace's people. Through the API's templates and sends
 * services; the forms are validated by the API's schemas, so the limits are the API's.
 */
export function templatesArea(services: ApiServices, deps: { auth: DashboardAuthService }): DashboardArea {
  return (router, kit: DashboardKit) => {
    const views = createTemplateViews(services, kit, deps);
    listAndPreviewRoutes(router, kit, services, views);
    oneTemplateRoutes(router, kit, services, views, deps);
  };
}

/** The list, a new template, creating it, and the previews. */
function listAndPreviewRoutes(router: Router, kit: DashboardKit, services: ApiServices, views: TemplateViews) {
  const { templates } = services;
  const { forms, templateOf, renderEditor, sendPreview } = views;
  router.get('/templates', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const folder = one(ctx.query.folder).trim() || undefined;
    const [page, folders] = await Promise.all([
      templates.listTemplates(signedIn.orgId, { limit: PAGE_SIZE, after: positionOf(ctx.query.older) }, folder ? { folderId: folder } : {}),
      templates.listFolders(signedIn.orgId),
    ]);
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      templatesPage({
        signedIn,
        templates: page.items,
        folders,
        folder,
        older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
      }),
    );
  });

  router.get('/templates/new', kit.requireSession, (ctx) =>
    renderEditor(ctx, 200, { fields: { name: '', subject: '', preview_text: '', html: '', folder_id: '', category: 'other' } }),
  );

  router.post('/templates', forms, kit.requireSession, async (ctx) => {
    const fields = postedFields(ctx);
    const { input, problems } = parseFields(fields, CreateTemplateBody);
    if (!input) return renderEditor(ctx, 400, { fields, problems, error: 'The template was not created: see the fields marked below.' });
    const created = await templates.createTemplate(kit.signedInOf(ctx).orgId, input as v.InferOutput<typeof CreateTemplateBody>);
    ctx.redirect(`${BASE}/${created.id}?saved=1`);
    ctx.status = 303;
  });

  // Previews change nothing: the form's one-time value is dropped so Save still works after them.
  const previewable = async (ctx: DashboardContext, next: () => Promise<void>) => {
    delete (ctx.request.body as Record<string, unknown> | undefined)?._once;
    await next();
  };

  router.post('/templates/preview', forms, previewable, kit.requireSession, (ctx) => {
    const fields = postedFields(ctx);
    sendPreview(ctx, fields, one(form(ctx).variables));
  });

  router.get('/templates/preview', kit.requireSession, (ctx) => sendPreview(ctx, { subject: '', preview_text: '', html: '' }, ''));

  router.get('/templates/:id/preview', kit.requireSession, async (ctx) => {
    const template = await templateOf(ctx);
    if (!template) return kit.notFound(ctx, 'template');
    sendPreview(ctx, fieldsOf(template), '');
  });
}

/** A template's editor: save (a new version), publish, and a test send. */
function oneTemplateRoutes(
  router: Router,
  kit: DashboardKit,
  services: ApiServices,
  views: TemplateViews,
  deps: { auth: DashboardAuthService },
) {
  const { templates } = services;
  const { forms, templateOf, renderEditor } = views;
  router.get('/templates/:id', kit.requireSession, async (ctx) => {
    const template = await templateOf(ctx);
    if (!template) return kit.notFound(ctx, 'template');
    const notice = { saved: `Saved as version ${template.version}.`, published: `Version ${template.version} is published.` }[
      String(ctx.query.saved ? 'saved' : ctx.query.published ? 'published' : '')
    ];
    await renderEditor(ctx, 200, { template, fields: fieldsOf(template), notice });
  });

  router.post('/templates/:id', forms, kit.requireSession, async (ctx) => {
    const template = await templateOf(ctx);
    if (!template) return kit.notFound(ctx, 'template');
    const fields = postedFields(ctx);
    const { input, problems } = parseFields(fields, UpdateTemplateBody);
    if (!input) return renderEditor(ctx, 400, { template, fields, problems, error: 'Nothing was saved: see the fields marked below.' });
    try {
      const saved = await templates.updateTemplate(kit.signedInOf(ctx).orgId, template.id, input);
      ctx.redirect(`${BASE}/${saved.id}?saved=1`);
      ctx.status = 303;
    } catch (error) {
      if (!isError(error, 'forbidden')) throw error;
      await renderEditor(ctx, 403, { template, fields, error: error.message });
    }
  });

  router.post('/templates/:id/publish', forms, kit.requireSession, async (ctx) => {
    const template = await templateOf(ctx);
    if (!template) return kit.notFound(ctx, 'template');
    const { syntaxError } = variablesOf(partsOf(fieldsOf(template)));
    const refuse = (status: number, error: string) => renderEditor(ctx, status, { template, fields: fieldsOf(template), error });
    if (syntaxError) return refuse(400, `Not published: the template is not valid Mustache (${syntaxError}).`);
    if (!template.html.trim() || !template.subject.trim()) return refuse(400, 'Not published: give it a subject and an HTML body first.');
    try {
      await templates.updateTemplate(kit.signedInOf(ctx).orgId, template.id, { status: 'published' });
    } catch (error) {
      if (!isError(error, 'forbidden')) throw error;
      return refuse(403, error.message);
    }
    ctx.redirect(`${BASE}/${template.id}?published=1`);
    ctx.status = 303;
  });

  router.post('/templates/:id/test', forms, kit.requireSession, async (ctx) => {
    const template = await templateOf(ctx);
    if (!template) return kit.notFound(ctx, 'template');
    const signedIn = kit.signedInOf(ctx);
    const outcome = await sendTemplateTest(services.sends, deps.auth, {
      signedIn,
      caller: kit.callerOf(signedIn),
      template,
      userId: one(form(ctx).user_id),
      from: one(form(ctx).from).trim(),
      variablesJson: one(form(ctx).variables),
    });
    await renderEditor(ctx, outcome.status, { template, fields: fieldsOf(template), ...outcome.message });
  });
}
