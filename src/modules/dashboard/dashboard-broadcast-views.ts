import { urlencodedForms, orNotFound } from './dashboard-kit.router.ts';
import type { ApiServices } from '../../api-composition.ts';
import { completeMetrics } from '../broadcasts/broadcasts.fns.ts';
import type { BroadcastView } from '../broadcasts/broadcasts.service.ts';
import { composePage, launchPage, type ComposeFields, type ComposePageModel } from './dashboard-broadcast-compose.pages.ts';
import { broadcastPage } from './dashboard-broadcasts.pages.ts';
import type { DashboardContext, DashboardKit } from './dashboard-kit.router.ts';

export const ID = /^[0-9a-fA-F]{24}$/;

/** A time as a `datetime-local` value in UTC (minutes). */
export const localUtc = (at: Date) => at.toISOString().slice(0, 16);

/** What the broadcasts routes share: the form parser, the workspace's broadcast of a request, and the pages' renderers. */
export function createBroadcastViews(services: ApiServices, kit: DashboardKit) {
  const { broadcasts, segments, templates } = services;
  // Bodies up to the API's limits (500,000 characters of HTML): more than the usual 64 kB forms.
  const forms = urlencodedForms('4mb');

  async function viewOf(ctx: DashboardContext): Promise<BroadcastView | null> {
    const id = (ctx.params as { id?: string }).id ?? '';
    if (!ID.test(id)) return null;
    return orNotFound(broadcasts.getBroadcast(kit.signedInOf(ctx).orgId, id));
  }

  async function segmentsOf(orgId: string) {
    return (await segments.listSegments(orgId, { limit: 100 }, { counts: 'stored' })).items;
  }

  async function renderCompose(ctx: DashboardContext, status: number, model: Partial<ComposePageModel> & { fields: ComposeFields }) {
    const signedIn = kit.signedInOf(ctx);
    const [segmentList, templateList, domains, streams] = await Promise.all([
      segmentsOf(signedIn.orgId),
      templates.listTemplates(signedIn.orgId, { limit: 100 }),
      services.domains.listDomains(signedIn.orgId),
      services.streams.listStreams(signedIn.orgId),
    ]);
    kit.send(
      ctx,
      status,
      composePage({
        signedIn,
        problems: {},
        segments: segmentList,
        templates: templateList.items,
        domains: domains.map((d) => d.domain),
        streams: streams.filter((stream) => stream.kind === 'broadcast').map((stream) => stream.name),
        ...model,
      }),
    );
  }

  async function renderBroadcast(
    ctx: DashboardContext,
    status: number,
    view: BroadcastView,
    extra: { error?: string; notice?: string } = {},
  ) {
    const signedIn = kit.signedInOf(ctx);
    const all = await segments.listSegments(signedIn.orgId, { limit: 100 }, { counts: false });
    const metrics = completeMetrics(view.broadcast.recipientCount ?? 0, view.counts);
    const picked = all.items.filter((s) => view.broadcast.segmentIds.includes(s.id));
    kit.send(ctx, status, broadcastPage({ signedIn, broadcast: view.broadcast, metrics, segments: picked, ...extra }));
    if (view.broadcast.status === 'scheduled' || view.broadcast.status === 'sending') ctx.set('Refresh', '5');
  }

  async function renderLaunch(ctx: DashboardContext, status: number, view: BroadcastView, extra: { error?: string; at?: string } = {}) {
    const signedIn = kit.signedInOf(ctx);
    const [audience, all] = await Promise.all([
      broadcasts.countAudience(signedIn.orgId, view.broadcast.segmentIds, view.broadcast.stream),
      segments.listSegments(signedIn.orgId, { limit: 100 }, { counts: false }),
    ]);
    const picked = all.items.filter((s) => view.broadcast.segmentIds.includes(s.id));
    const at = view.broadcast.scheduledAt ? localUtc(view.broadcast.scheduledAt) : undefined;
    kit.send(ctx, status, launchPage({ signedIn, broadcast: view.broadcast, audience, segments: picked, ...(at ? { at } : {}), ...extra }));
  }

  return { forms, viewOf, renderCompose, renderBroadcast, renderLaunch };
}

export type BroadcastViews = ReturnType<typeof createBroadcastViews>;
