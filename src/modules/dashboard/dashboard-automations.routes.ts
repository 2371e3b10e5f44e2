import type { MikroORM } from '@mikro-orm/postgresql';
import type { ApiServices } from '../../api-composition.ts';
import { automationRunsRoutes } from './dashboard-automation-runs.routes.ts';
import { editorPost } from './dashboard-automation-edits.ts';
import { createAutomationViews, type AutomationViews } from './dashboard-automation-views.ts';
import { STARTER_DEFINITION } from './dashboard-automations.forms.ts';
import { archivePage, automationsPage, BASE, newAutomationPage, OWNER_ONLY_NOTE } from './dashboard-automations.pages.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import { form, one, type DashboardArea, type DashboardKit } from './dashboard-kit.router.ts';

const PAGE_SIZE = 50;

/**
 * The automations pages of the dashboard (/dashboard/automations): the list with counters,
 * creating and editing a definition (builder and JSON), validating and publishing it through
 * the authoring service, the lifecycle through the automations service the API uses (owners
 * switch an automation on), and an automation's runs and run timelines.
 */
export function automationsArea(services: ApiServices, orm: MikroORM): DashboardArea {
  return (router, kit: DashboardKit) => {
    const views = createAutomationViews(services, orm, kit);
    const deps = { kit, views, automations: services.automations };
    listRoutes(router, deps);
    automationRoutes(router, deps);
    automationRunsRoutes(router, kit, { history: services.automationHistory, contacts: views.reader, automationOf: views.automationOf });
  };
}

type Router = Parameters<DashboardArea>[0];
type Deps = { kit: DashboardKit; views: AutomationViews; automations: ApiServices['automations'] };

/** The list, and the new automation's editor. */
function listRoutes(router: Router, deps: Deps): void {
  const { kit, views, automations } = deps;
  router.get('/automations', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const page = await automations.listAutomations(signedIn.orgId, { limit: PAGE_SIZE, after: positionOf(ctx.query.older) });
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      automationsPage({
        signedIn,
        automations: page.items,
        stats: page.stats,
        older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
      }),
    );
  });

  router.get('/automations/new', kit.requireSession, async (ctx) => {
    kit.send(ctx, 200, newAutomationPage(await views.editorModel(ctx, { name: '', description: '', definition: STARTER_DEFINITION }, {})));
  });

  router.post('/automations/new', views.editorForms, kit.requireSession, (ctx) => editorPost(ctx, null, deps));
}

/** An automation's page and editor, its status (activate, pause, resume) and archiving. */
function automationRoutes(router: Router, deps: Deps): void {
  const { kit, views, automations } = deps;
  const { automationOf, renderAutomation, reader } = views;
  const { notFound } = kit;
  router.get('/automations/:id', kit.requireSession, async (ctx) => {
    const found = await automationOf(ctx, ctx.params.id ?? '');
    if (!found) return notFound(ctx, 'automation');
    const q = ctx.query;
    const notice =
      q.created === '1'
        ? 'Automation created as a draft, its definition published as version 1. Activate it to let contacts in.'
        : typeof q.published === 'string' && /^\d+$/.test(q.published)
          ? `Published as version ${q.published}: runs that start from now on follow it; runs in flight keep theirs.`
          : q.changed === 'active'
            ? 'Active: contacts that match the trigger enter it from now on.'
            : q.changed === 'paused'
              ? 'Paused: no one enters it, and its runs wait until it is resumed.'
              : q.archived === '1'
                ? 'Archived: no one enters it and its open runs end.'
                : undefined;
    await renderAutomation(ctx, 200, found, undefined, notice ? { notice } : {});
  });

  router.post('/automations/:id', views.editorForms, kit.requireSession, async (ctx) => {
    const found = await automationOf(ctx, ctx.params.id ?? '');
    if (!found) return notFound(ctx, 'automation');
    await editorPost(ctx, found, deps);
  });

  router.post('/automations/:id/status', kit.forms, kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const found = await automationOf(ctx, ctx.params.id ?? '');
    if (!found) return notFound(ctx, 'automation');
    const { automation } = found;
    const to = one(form(ctx).to);
    const refuse = (status: number, error: string) => renderAutomation(ctx, status, found, undefined, { error });
    if (to !== 'active' && to !== 'paused') return refuse(400, 'Choose to activate, pause or resume it.');
    if (automation.status === 'archived') return refuse(409, 'An archived automation stays archived.');
    if (automation.status === to) return refuse(409, `It is ${to} already.`);
    if (to === 'paused' && automation.status !== 'active') return refuse(409, 'Only an active automation can be paused.');
    if (to === 'active' && signedIn.role !== 'owner') return refuse(403, OWNER_ONLY_NOTE);
    if (to === 'active' && !automation.definitionId)
      return refuse(409, 'Publish a definition first: an automation without one has nothing to run.');
    await automations.updateAutomation(signedIn.orgId, automation.id, { status: to });
    ctx.redirect(`${BASE}/${automation.id}?changed=${to}`);
    ctx.status = 303;
  });

  router.get('/automations/:id/archive', kit.requireSession, async (ctx) => {
    const automation = (await automationOf(ctx, ctx.params.id ?? ''))?.automation;
    if (!automation) return notFound(ctx, 'automation');
    if (automation.status === 'archived') {
      ctx.redirect(`${BASE}/${automation.id}`);
      return;
    }
    const signedIn = kit.signedInOf(ctx);
    kit.send(ctx, 200, archivePage({ signedIn, automation, openRuns: await reader.openRuns(signedIn.orgId, automation.id) }));
  });

  router.post('/automations/:id/archive', kit.forms, kit.requireSession, async (ctx) => {
    const automation = (await automationOf(ctx, ctx.params.id ?? ''))?.automation;
    if (!automation) return notFound(ctx, 'automation');
    await automations.archiveAutomation(kit.signedInOf(ctx).orgId, automation.id);
    ctx.redirect(`${BASE}/${automation.id}?archived=1`);
    ctx.status = 303;
  });
}
