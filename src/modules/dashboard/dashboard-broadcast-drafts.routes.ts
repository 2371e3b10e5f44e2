import * as v from 'valibot';
import type { ApiServices } from '../../api-composition.ts';
import type { Broadcast } from '../../../db/entities/index.ts';
import type { AppError } from '../../errors.ts';
import { UpdateBroadcastBody } from '../broadcasts/broadcasts.schemas.ts';
import { keepFormReusable, bodyOf, fieldsOf, postedFields, problemsOf, refusalOf } from './dashboard-broadcast-forms.ts';
import type { BroadcastViews } from './dashboard-broadcast-views.ts';
import { BROADCASTS } from './dashboard-broadcasts.pages.ts';
import { isError, type DashboardArea, type DashboardKit } from './dashboard-kit.router.ts';

type Router = Parameters<DashboardArea>[0];

/**
 * Changing and deleting a draft, through the API's updateBroadcast and deleteBroadcast (only a
 * draft: a launched broadcast's page says why it cannot be edited, and these answer 409).
 */
export function draftRoutes(router: Router, kit: DashboardKit, services: ApiServices, views: BroadcastViews) {
  const { broadcasts } = services;
  const { forms, viewOf, renderCompose, renderBroadcast } = views;
  const notDraft = (b: Broadcast) => `This broadcast is ${b.status}: only a draft can be edited or deleted.`;

  router.get('/broadcasts/:id/edit', kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    if (view.broadcast.status !== 'draft') return renderBroadcast(ctx, 409, view, { error: notDraft(view.broadcast) });
    await renderCompose(ctx, 200, { fields: fieldsOf(view.broadcast), editing: view.broadcast });
  });

  router.post('/broadcasts/:id/edit/audience', forms, keepFormReusable, kit.requireSession, async (ctx) => {
    const view = await viewOf(ctx);
    if (!view) return kit.notFound(ctx, 'broadcast');
    const fields = postedFields(ctx);
    const audience = await broadcasts.countAudience(kit.signedInOf(ctx).orgId, fields.segment_ids, view.broadcast.stream);
    await renderCompose(ctx, 200, { fields, audience, editing: view.broadcast });
  });

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
