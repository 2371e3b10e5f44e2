import * as v from 'valibot';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { completeMetrics } from '../broadcasts/broadcasts.fns.ts';
import { CreateBroadcastBody, UpdateBroadcastBody } from '../broadcasts/broadcasts.schemas.ts';
import type { Broadcast } from '../../../db/entities/index.ts';
import type { ComposeFields } from './dashboard-broadcast-compose.pages.ts';
import { createBroadcastViews, ID, localUtc, type BroadcastViews } from './dashboard-broadcast-views.ts';
import { BROADCASTS, broadcastsPage } from './dashboard-broadcasts.pages.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import { form, isError, many, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard.router.ts';

const EMPTY: ComposeFields = {
  name: '',
  subject: '',
  preview_text: '',
  from_name: '',
  from_email: '',
  reply_to: '',
  html: '',
  plain_text: '',
  segment_ids: [],
  stream: 'broadcast',
  scheduled_at: '',
};

function postedFields(ctx: DashboardContext): ComposeFields {
  const f = form(ctx);
  return {
    name: one(f.name),
    subject: one(f.subject),
    preview_text: one(f.preview_text),
    from_name: one(f.from_name),
    from_email: one(f.from_email),
    reply_to: one(f.reply_to),
    html: one(f.html),
    plain_text: one(f.plain_text),
    segment_ids: many(f.segment_ids).filter((id) => ID.test(id)),
    stream: one(f.stream) || 'broadcast',
    scheduled_at: one(f.scheduled_at),
  };
}

/** A draft's fields as the form shows them. */
function fieldsOf(b: Broadcast): ComposeFields {
  return {
    name: b.name,
    subject: b.subject,
    preview_text: b.previewText,
    from_name: b.fromName,
    from_email: b.fromEmail,
    reply_to: b.replyTo ?? '',
    html: b.html,
    plain_text: b.plainText,
    segment_ids: [...b.segmentIds],
    stream: b.stream,
    scheduled_at: b.scheduledAt ? localUtc(b.scheduledAt) : '',
  };
}

/** The form's fields as the API's body: empty optional fields left out, the UTC `datetime-local` as RFC 3339. */
function bodyOf(fields: ComposeFields) {
  const at = fields.scheduled_at.trim();
  return {
    ...fields,
    reply_to: fields.reply_to.trim() || undefined,
    scheduled_at: at === '' ? undefined : /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(at) ? `${at}:00Z` : at,
  };
}

/** The refusal of a draft's fields as problems by field, or null for an error that is not about them. */
function refusalOf(error: unknown): Record<string, string> | null {
  if (!isError(error, 'invalid_request') && !isError(error, 'unprocessable_entity')) return null;
  return problemsOf(
    (error.details?.fields as { path: string; message: string }[] | undefined) ?? [{ path: 'name', message: error.message }],
  );
}

/** Problems by field from the API's schema or the service's `details.fields` (`segment_ids.0` → `segment_ids`). */
function problemsOf(fields: readonly { path: string; message: string }[]): Record<string, string> {
  const problems: Record<string, string> = {};
  for (const { path, message } of fields) problems[path.split('.')[0]!] ??= message;
  return problems;
}

/** The launch form's `at` (a `datetime-local` in UTC) as RFC 3339, or null for now. */
function scheduledAtOf(ctx: DashboardContext): { at: string | null; shown?: string } {
  const at = one(form(ctx).at);
  if (one(form(ctx).when) !== 'later') return { at: null };
  return { at: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}$/.test(at) ? `${at}:00Z` : at, shown: at };
}

/**
 * The broadcasts pages (/dashboard/broadcasts): the list, composing a draft (from a published
 * template or from scratch, segments with the audience counted), a launch confirmation that
 * says how many people will receive it (now or scheduled), cancel, and a broadcast's page that
 * follows its counters live. Through the API's broadcasts, segments, templates and domains
 * services; a launch is the person's (`callerOf`: an owner's is live, a member's is a test,
 * whose messages stay in the sandbox). Refusals are shown as messages with their status.
 */
export function broadcastsArea(services: ApiServices): DashboardArea {
  return (router, kit: DashboardKit) => {
    const views = createBroadcastViews(services, kit);
    listAndComposeRoutes(router, kit, services, views);
    oneBroadcastRoutes(router, kit, services, views);
    draftRoutes(router, kit, services, views);
  };
}

type Router = Parameters<DashboardArea>[0];

/** The list, composing a draft (from a template or from scratch), counting its audience, saving it. */
function listAndComposeRoutes(router: Router, kit: DashboardKit, services: ApiServices, views: BroadcastViews) {
  const { broadcasts, templates } = services;
  const { forms, renderCompose } = views;
  router.get('/broadcasts', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const page = await broadcasts.listBroadcasts(signedIn.orgId, { limit: 50, after: positionOf(ctx.query.older) });
    const last = page.items.at(-1);
    const rows = page.items.map((broadcast) => ({
      broadcast,
      metrics: completeMetrics(broadcast.recipientCount ?? 0, page.counts.get(broadcast.id)),
    }));
    kit.send(
      ctx,
      200,
      broadcastsPage({
        signedIn,
        broadcasts: rows,
        older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
        notice: ctx.query.done === 'deleted' ? 'Draft deleted.' : undefined,
      }),
    );
  });

  router.get('/broadcasts/new', kit.requireSession, async (ctx) => {
    const templateId = one(ctx.query.template);
    let fields = EMPTY;
    if (ID.test(templateId)) {
      try {
        const t = await templates.getTemplate(kit.signedInOf(ctx).orgId, templateId.toLowerCase());
        fields = { ...EMPTY, name: t.name, subject: t.subject, preview_text: t.previewText, html: t.html };
      } catch (error) {
        if (!isError(error, 'not_found')) throw error;
        return kit.notFound(ctx, 'template');
      }
    }
    await renderCompose(ctx, 200, { fields, templateId });
  });

  // Counting changes nothing: the form's one-time value is dropped so Save draft still works after it.
  router.post(
    '/broadcasts/new/audience',
    forms,
    async (ctx, next) => {
      delete (ctx.request.body as Record<string, unknown> | undefined)?._once;
      await next();
    },
    kit.requireSession,
    async (ctx) => {
      const fields = postedFields(ctx);
      const audience = await broadcasts.countAudience(kit.signedInOf(ctx).orgId, fields.segment_ids);
      await renderCompose(ctx, 200, { fields, audience });
    },
  );

  router.post('/broadcasts', forms, kit.requireSession, async (ctx) => {
    const fields = postedFields(ctx);
    const parsed = v.safeParse(CreateBroadcastBody, bodyOf(fields));
    const again = (status: number, problems: Record<string, string>) =>
      renderCompose(ctx, status, { fields, problems, error: 'The draft was not saved: see the fields marked below.' });
    if (!parsed.success) return again(400, problemsOf(parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? 'name', message: i.message }))));
    try {
      const created = await broadcasts.createBroadcast(kit.signedInOf(ctx).orgId, parsed.output);
      ctx.redirect(`${BROADCASTS}/${created.id}`);
      ctx.status = 303;
    } catch (error) {
      const problems = refusalOf(error);
      if (!problems) throw error;
      await again((error as AppError).status, problems);
    }
  });
}

/** A broadcast's page, its launch (confirmation, then now or at a time) and its cancel. */
function oneBroadcastRoutes(router: Router, kit: DashboardKit, services: ApiServices, views: BroadcastViews) {
  const { broadcasts } = services;
  const { forms, viewOf, renderBroadcast, renderLaunch } = views;
  router.get('/broadcasts/:id', kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    const notice = {
      launched: 'Launched: the counters below follow it.',
      cancelled: 'Cancelled: messages not yet handed off will not be sent.',
      saved: 'Draft saved.',
    }[String(ctx.query.done ?? '')];
    await renderBroadcast(ctx, 200, view, notice ? { notice } : {});
  });

  router.get('/broadcasts/:id/launch', kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    if (view.broadcast.status !== 'draft')
      return renderBroadcast(ctx, 409, view, { error: `This broadcast is ${view.broadcast.status}: only a draft can be sent.` });
    await renderLaunch(ctx, 200, view);
  });

  router.post('/broadcasts/:id/launch', forms, kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    const signedIn = kit.signedInOf(ctx);
    const { at, shown } = scheduledAtOf(ctx);
    try {
      const launched = await broadcasts.launchBroadcast(
        signedIn.orgId,
        view.broadcast.id,
        { scheduled_at: at, tracking: { opens: one(form(ctx).track_opens) === 'on', clicks: one(form(ctx).track_clicks) === 'on' } },
        kit.callerOf(signedIn),
      );
      ctx.redirect(`${BROADCASTS}/${launched.broadcast.id}?done=launched`);
      ctx.status = 303;
    } catch (error) {
      if (!(error instanceof AppError) || (error.status >= 500 && error.code !== 'service_unavailable')) throw error;
      if (error.code === 'conflict') return renderBroadcast(ctx, 409, view, { error: error.message });
      await renderLaunch(ctx, error.status, view, { error: `Not sent: ${error.message}`, ...(shown ? { at: shown } : {}) });
    }
  });

  router.post('/broadcasts/:id/cancel', forms, kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    try {
      await broadcasts.cancelBroadcast(kit.signedInOf(ctx).orgId, view.broadcast.id);
    } catch (error) {
      if (!isError(error, 'conflict')) throw error;
      return renderBroadcast(ctx, 409, view, { error: error.message });
    }
    ctx.redirect(`${BROADCASTS}/${view.broadcast.id}?done=cancelled`);
    ctx.status = 303;
  });
}

/**
 * Changing and deleting a draft, through the API's updateBroadcast and deleteBroadcast (only a
 * draft: a launched broadcast's page says why it cannot be edited, and these answer 409).
 */
function draftRoutes(router: Router, kit: DashboardKit, services: ApiServices, views: BroadcastViews) {
  const { broadcasts } = services;
  const { forms, viewOf, renderCompose, renderBroadcast } = views;
  const notDraft = (b: Broadcast) => `This broadcast is ${b.status}: only a draft can be edited or deleted.`;

  router.get('/broadcasts/:id/edit', kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    if (view.broadcast.status !== 'draft') return renderBroadcast(ctx, 409, view, { error: notDraft(view.broadcast) });
    await renderCompose(ctx, 200, { fields: fieldsOf(view.broadcast), editing: view.broadcast });
  });

  router.post(
    '/broadcasts/:id/edit/audience',
    forms,
    async (ctx, next) => {
      delete (ctx.request.body as Record<string, unknown> | undefined)?._once;
      await next();
    },
    kit.requireSession,
    async (ctx) => {
      const view = await viewOf(ctx);
      if (!view) return kit.notFound(ctx, 'broadcast');
      const fields = postedFields(ctx);
      const audience = await broadcasts.countAudience(kit.signedInOf(ctx).orgId, fields.segment_ids, view.broadcast.stream);
      await renderCompose(ctx, 200, { fields, audience, editing: view.broadcast });
    },
  );

  router.post('/broadcasts/:id/edit', forms, kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    if (view.broadcast.status !== 'draft') return renderBroadcast(ctx, 409, view, { error: notDraft(view.broadcast) });
    const fields = postedFields(ctx);
    const again = (status: number, problems: Record<string, string>, error = 'The draft was not saved: see the fields marked below.') =>
      renderCompose(ctx, status, { fields, problems, error, editing: view.broadcast });
    // Every field of the form is sent: an emptied schedule or Reply-To clears it.
    const body = { ...bodyOf(fields), reply_to: fields.reply_to.trim() || null, scheduled_at: bodyOf(fields).scheduled_at ?? null };
    const parsed = v.safeParse(UpdateBroadcastBody, body);
    if (!parsed.success) return again(400, problemsOf(parsed.issues.map((i) => ({ path: v.getDotPath(i) ?? 'name', message: i.message }))));
    try {
      await broadcasts.updateBroadcast(kit.signedInOf(ctx).orgId, view.broadcast.id, parsed.output);
    } catch (error) {
      if (isError(error, 'conflict')) return renderBroadcast(ctx, 409, view, { error: notDraft(view.broadcast) });
      const problems = refusalOf(error);
      if (!problems) throw error;
      return again((error as AppError).status, problems);
    }
    ctx.redirect(`${BROADCASTS}/${view.broadcast.id}?done=saved`);
    ctx.status = 303;
  });

  router.post('/broadcasts/:id/delete', forms, kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    try {
      await broadcasts.deleteBroadcast(kit.signedInOf(ctx).orgId, view.broadcast.id);
    } catch (error) {
      if (!isError(error, 'conflict')) throw error;
      return renderBroadcast(ctx, 409, view, { error: notDraft(view.broadcast) });
    }
    ctx.redirect(`${BROADCASTS}?done=deleted`);
    ctx.status = 303;
  });
}
