import * as v from 'valibot';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { AddSuppressionBody, ListSuppressionsQuery } from '../suppressions/suppressions.schemas.ts';
import { removeSuppressionPage, suppressionsPage, type SuppressionsPageModel } from './dashboard-suppressions.pages.ts';
import { firstText, keysetPositionOf } from './dashboard-paging.ts';
import { form, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

const PAGE_SIZE = 50;
const problemsOf = (issues: readonly v.BaseIssue<unknown>[]) =>
  issues.map((issue) => `${v.getDotPath(issue) === 'email' ? 'Address' : (v.getDotPath(issue) ?? 'Form')}: ${issue.message}.`).join(' ');

/**
 * The suppressions pages (/dashboard/suppressions): the list with reasons and dates, searched by
 * address and reason (GET /suppressions' filters), adding an address by hand, and removing one
 * after a page that says what removing does (the suppressions service: audit trail, contact
 * reactivated).
 */
export function suppressionsArea(services: ApiServices): DashboardArea {
  const { suppressions } = services;

  return (router, kit: DashboardKit) => {
    async function render(ctx: DashboardContext, status: number, extra: Partial<SuppressionsPageModel> = {}): Promise<void> {
      const signedIn = kit.signedInOf(ctx);
      const filters = { email: firstText(ctx.query.email).trim(), reason: firstText(ctx.query.reason) };
      const base = { signedIn, filters, suppressions: [], olderHref: null, newestHref: null };
      const given = Object.fromEntries(Object.entries(filters).filter(([, value]) => value !== ''));
      const parsed = v.safeParse(ListSuppressionsQuery, given, { abortEarly: false });
      if (!parsed.success) return kit.send(ctx, 400, suppressionsPage({ ...base, error: problemsOf(parsed.issues), ...extra }));
      const after = keysetPositionOf(ctx.query.older);
      const page = await suppressions.listSuppressions(signedIn.orgId, { limit: PAGE_SIZE, after }, parsed.output);
      const last = page.items.at(-1);
      const href = (older?: string) => {
        const query = new URLSearchParams(given);
        if (older) query.set('older', older);
        return `/dashboard/suppressions${query.size > 0 ? `?${query.toString()}` : ''}`;
      };
      kit.send(
        ctx,
        status,
        suppressionsPage({
          ...base,
          suppressions: page.items,
          olderHref: page.hasMore && last ? href(`${last.createdAt.getTime()}.${last.id}`) : null,
          newestHref: after ? href() : null,
          ...(ctx.query.removed ? { notice: 'The suppression was removed: sends to the address pass again.' } : {}),
          ...extra,
        }),
      );
    }

    router.get('/suppressions', kit.requireSession, (ctx) => render(ctx, 200));

    router.post('/suppressions', kit.forms, kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const typed = { email: one(form(ctx).email), detail: one(form(ctx).detail) };
      const parsed = v.safeParse(AddSuppressionBody, typed.detail.trim() === '' ? { email: typed.email } : typed, { abortEarly: false });
      if (!parsed.success) return render(ctx, 400, { form: typed, error: problemsOf(parsed.issues) });
      try {
        await suppressions.addSuppression(signedIn.orgId, null, parsed.output);
      } catch (error) {
        if (!(error instanceof AppError) || error.code !== 'conflict') throw error;
        return render(ctx, 409, { form: typed, error: error.message });
      }
      await render(ctx, 201, { notice: `${parsed.output.email} is suppressed: every send to it is refused from now on.` });
    });

    router.get('/suppressions/remove', kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const parsed = v.safeParse(AddSuppressionBody, { email: firstText(ctx.query.email) });
      const page = parsed.success
        ? await suppressions.listSuppressions(signedIn.orgId, { limit: 1 }, { email: parsed.output.email })
        : null;
      const entry = page?.items[0];
      if (!entry) return kit.notFound(ctx, 'suppressed address');
      kit.send(ctx, 200, removeSuppressionPage({ signedIn, entry }));
    });

    router.post('/suppressions/remove', kit.forms, kit.requireSession, async (ctx) => {
      const signedIn = kit.signedInOf(ctx);
      const parsed = v.safeParse(AddSuppressionBody, { email: one(form(ctx).email) });
      if (!parsed.success) return kit.notFound(ctx, 'suppressed address');
      try {
        await suppressions.removeSuppression(signedIn.orgId, null, parsed.output.email);
      } catch (error) {
        if (error instanceof AppError && error.code === 'not_found') return kit.notFound(ctx, 'suppressed address');
        throw error;
      }
      ctx.redirect('/dashboard/suppressions?removed=1');
      ctx.status = 303;
    });
  };
}
