import * as v from 'valibot';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { completeMetrics } from '../broadcasts/broadcasts.fns.ts';
import { CreateBroadcastBody } from '../broadcasts/broadcasts.schemas.ts';
import { draftRoutes } from './dashboard-broadcast-drafts.routes.ts';
import { keepFormReusable, bodyOf, EMPTY, postedFields, problemsOf, refusalOf } from './dashboard-broadcast-forms.ts';
import { createBroadcastViews, ID, type BroadcastViews } from './dashboard-broadcast-views.ts';
import { BROADCASTS, broadcastsPage } from './dashboard-broadcasts.pages.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import { form, isError, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

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

  router.post('/broadcasts/new/audience', forms, keepFormReusable, kit.requireSession, async (ctx) => {
    const fields = postedFields(ctx);
    const audience = await broadcasts.countAudience(kit.signedInOf(ctx).orgId, fields.segment_ids);
    await renderCompose(ctx, 200, { fields, audience });
  });

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
