import * as v from 'valibot';
import { isId } from '../../../db/ids.ts';
import type { ApiServices } from '../../api-composition.ts';
import { AppError } from '../../errors.ts';
import { CreateSegmentBody, MembershipBody } from '../segments/segments.schemas.ts';
import type { ContactListItem } from './dashboard-contacts.pages.ts';
import { COUNT_CAP, segmentFormPage, segmentPage, segmentsPage, type SegmentForm } from './dashboard-segments.pages.ts';
import { keysetPositionOf } from './dashboard-paging.ts';
import { form, one, pathId, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

const PAGE_SIZE = 50;
const split = (text: string) =>
  text
    .split(/[,\n]/)
    .map((part) => part.trim())
    .filter((part) => part !== '');

const problemsOf = (issues: readonly v.BaseIssue<unknown>[]) =>
  issues.map((issue) => `${v.getDotPath(issue) ?? 'Form'}: ${issue.message}.`).join(' ');

const isNotFound = (error: unknown) => error instanceof AppError && error.code === 'not_found';

/** A handler for the segment in the path: `work` runs for a well-formed id, and a segment of no one or of another workspace answers 404. */
function withSegment(kit: DashboardKit, work: (ctx: DashboardContext, id: string) => Promise<void>) {
  return async (ctx: DashboardContext): Promise<void> => {
    const id = pathId(ctx).toLowerCase();
    try {
      if (!isId(id)) throw new AppError('not_found', 'no such segment');
      await work(ctx, id);
    } catch (error) {
      if (isNotFound(error)) return kit.notFound(ctx, 'segment');
      throw error;
    }
  };
}

type Router = Parameters<DashboardArea>[0];

/**
 * The segments pages (/dashboard/segments): the list with stored counts (segment-counts.ts), creating
 * and editing a segment (dynamic by tags, or static) with the count of its rule before it is
 * saved, a segment's members a page at a time, and a static segment's members added and removed
 * by address (POST /segments/{id}/contacts and /contacts/remove: the membership service's rules).
 */
export function segmentsArea(services: ApiServices): DashboardArea {
  return (router, kit: DashboardKit) => {
    formRoutes(router, kit, services);
    segmentRoutes(router, kit, services);
  };
}

/** Creating and editing a segment, with the count of its rule before it is saved. */
function formRoutes(router: Router, kit: DashboardKit, { segments }: Pick<ApiServices, 'segments'>): void {
  const fieldsOf = (ctx: DashboardContext): SegmentForm => ({
    name: one(form(ctx).name),
    description: one(form(ctx).description),
    kind: one(form(ctx).kind) === 'static' ? 'static' : 'dynamic',
    tags: one(form(ctx).tags),
  });

  router.get('/segments/new', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const blank = { name: '', description: '', kind: 'dynamic', tags: '' };
    kit.send(ctx, 200, segmentFormPage({ signedIn, form: blank, matching: await segments.countMatching(signedIn.orgId, [], COUNT_CAP) }));
  });

  /** Saves the form (create, or edit `id`), or answers it again with the count of its rule. */
  async function submit(ctx: DashboardContext, id: string | null): Promise<void> {
    const signedIn = kit.signedInOf(ctx);
    const typed = fieldsOf(ctx);
    const existing = id ? (await segments.getSegment(signedIn.orgId, id, { countUpTo: 1 })).segment : undefined;
    const tags = typed.kind === 'static' ? [] : split(typed.tags);
    const again = async (status: number, error?: string) => {
      const matching = typed.kind === 'static' ? null : await segments.countMatching(signedIn.orgId, tags, COUNT_CAP);
      kit.send(
        ctx,
        status,
        segmentFormPage({ signedIn, form: typed, matching, ...(existing ? { segment: existing } : {}), ...(error ? { error } : {}) }),
      );
    };
    const body = { name: typed.name, description: typed.description, tags, ...(typed.kind === 'static' ? { type: 'static' } : {}) };
    const parsed = v.safeParse(CreateSegmentBody, body, { abortEarly: false });
    if (!parsed.success) return again(400, problemsOf(parsed.issues));
    if (one(form(ctx).action) === 'count') return again(200);
    const saved = id
      ? await segments.updateSegment(signedIn.orgId, id, parsed.output)
      : (await segments.createSegment(signedIn.orgId, parsed.output)).segment;
    ctx.redirect(`/dashboard/segments/${saved.id}`);
    ctx.status = 303;
  }

  router.post('/segments', kit.forms, kit.requireSession, (ctx) => submit(ctx, null));

  router.get(
    '/segments/:id/edit',
    kit.requireSession,
    withSegment(kit, async (ctx, id) => {
      const signedIn = kit.signedInOf(ctx);
      const { segment } = await segments.getSegment(signedIn.orgId, id, { countUpTo: 1 });
      const typed = {
        name: segment.name,
        description: segment.description,
        kind: segment.type === 'static' ? 'static' : 'dynamic',
        tags: segment.tags.join(', '),
      };
      const matching = segment.type === 'static' ? null : await segments.countMatching(signedIn.orgId, segment.tags, COUNT_CAP);
      kit.send(ctx, 200, segmentFormPage({ signedIn, segment, form: typed, matching }));
    }),
  );

  router.post(
    '/segments/:id',
    kit.forms,
    kit.requireSession,
    withSegment(kit, (ctx, id) => submit(ctx, id)),
  );
}

/** The list, a segment's page with its members, and a static segment's members added and removed. */
function segmentRoutes(router: Router, kit: DashboardKit, { segments, membership }: Pick<ApiServices, 'segments' | 'membership'>): void {
  router.get('/segments', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const page = await segments.listSegments(
      signedIn.orgId,
      { limit: PAGE_SIZE, after: keysetPositionOf(ctx.query.older) },
      { counts: 'stored' },
    );
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      segmentsPage({
        signedIn,
        segments: page.items,
        olderHref: page.hasMore && last ? `/dashboard/segments?older=${last.createdAt.getTime()}.${last.id}` : null,
      }),
    );
  });

  async function renderSegment(
    ctx: DashboardContext,
    id: string,
    status: number,
    extra: { notice?: string; error?: string; emails?: string } = {},
  ) {
    const signedIn = kit.signedInOf(ctx);
    const { segment, contactCount } = await segments.getSegment(signedIn.orgId, id, { countUpTo: COUNT_CAP });
    const page = await membership.listMembers(signedIn.orgId, id, { limit: PAGE_SIZE, after: keysetPositionOf(ctx.query.older) });
    const older = page.hasMore && page.last ? `/dashboard/segments/${id}?older=${page.last.sortValue.getTime()}.${page.last.id}` : null;
    const members = JSON.parse(page.json) as ContactListItem[];
    kit.send(ctx, status, segmentPage({ signedIn, segment, contactCount, members, olderHref: older, ...extra }));
  }

  router.get(
    '/segments/:id',
    kit.requireSession,
    withSegment(kit, (ctx, id) => renderSegment(ctx, id, 200)),
  );

  const changeMembers = (remove: boolean) =>
    withSegment(kit, async (ctx, id) => {
      const signedIn = kit.signedInOf(ctx);
      const typed = [form(ctx).emails ?? []].flat().join('\n');
      const parsed = v.safeParse(MembershipBody, { emails: split(typed) }, { abortEarly: false });
      if (!parsed.success) return renderSegment(ctx, id, 400, { error: problemsOf(parsed.issues), emails: typed });
      const removing = remove || one(form(ctx).action) === 'remove';
      try {
        const change = removing
          ? await membership.removeMembers(signedIn.orgId, id, parsed.output)
          : await membership.addMembers(signedIn.orgId, id, parsed.output);
        const missing = change.notFound.emails.length > 0 ? ` No contact has ${change.notFound.emails.join(', ')}.` : '';
        const done = removing
          ? `${change.changed} removed, ${change.unchanged} were not members.`
          : `${change.changed} added, ${change.unchanged} were already members.`;
        await renderSegment(ctx, id, 200, { notice: `${done}${missing}` });
      } catch (error) {
        if (!(error instanceof AppError) || isNotFound(error)) throw error;
        await renderSegment(ctx, id, error.status, { error: error.message, emails: typed });
      }
    });

  router.post('/segments/:id/members', kit.forms, kit.requireSession, changeMembers(false));
  router.post('/segments/:id/members/remove', kit.forms, kit.requireSession, changeMembers(true));
}
