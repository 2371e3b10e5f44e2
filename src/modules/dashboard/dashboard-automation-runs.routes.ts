import type Router from '@koa/router';
import { AUTOMATION_RUN_STATUSES, type Automation, type AutomationRunStatus } from '../../../db/entities/index.ts';
import type { HeraldState } from '../../http/state.ts';
import { runPage, runsPage } from './dashboard-automation-runs.pages.ts';
import { TIMELINE_LIMIT, type AutomationRunsReader } from './dashboard-automations.repo.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import { one, type DashboardContext, type DashboardKit } from './dashboard.router.ts';

const PAGE_SIZE = 50;
const ID = /^[0-9a-f]{24}$/;

/**
 * An automation's runs (/dashboard/automations/:id/runs: newest first, a status filter, keyset
 * pages) and one run's timeline, read from the workspace's runs (dashboard-automations.repo.ts).
 */
export function automationRunsRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  deps: { reader: AutomationRunsReader; automationOf: (ctx: DashboardContext, id: string) => Promise<Automation | null> },
): void {
  const { reader, automationOf } = deps;
  const { notFound } = kit;

  router.get('/automations/:id/runs', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const automation = await automationOf(ctx, ctx.params.id ?? '');
    if (!automation) return notFound(ctx, 'automation');
    const wanted = one(ctx.query.status);
    const status = (AUTOMATION_RUN_STATUSES as readonly string[]).includes(wanted) ? (wanted as AutomationRunStatus) : undefined;
    const page = await reader.listRuns(signedIn.orgId, automation.id, { limit: PAGE_SIZE, after: positionOf(ctx.query.older) }, status);
    const [contacts, versions, stats] = await Promise.all([
      reader.contactEmails(
        signedIn.orgId,
        page.items.map((run) => run.contactId),
      ),
      reader.definitionVersions(
        signedIn.orgId,
        page.items.map((run) => run.definitionId),
      ),
      reader.stats(signedIn.orgId, [automation.id]),
    ]);
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      runsPage({
        signedIn,
        automation,
        stats: stats.get(automation.id)!,
        runs: page.items,
        contacts,
        versions,
        status,
        older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
      }),
    );
  });

  router.get('/automations/:id/runs/:runId', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const automation = await automationOf(ctx, ctx.params.id ?? '');
    const runId = ctx.params.runId ?? '';
    const run = automation && ID.test(runId) ? await reader.getRun(signedIn.orgId, automation.id, runId) : null;
    if (!automation || !run) return notFound(ctx, automation ? 'run of this automation' : 'automation');
    const [steps, contacts, versions] = await Promise.all([
      reader.timeline(signedIn.orgId, run.id),
      reader.contactEmails(signedIn.orgId, [run.contactId]),
      reader.definitionVersions(signedIn.orgId, [run.definitionId]),
    ]);
    kit.send(
      ctx,
      200,
      runPage({
        signedIn,
        automation,
        run,
        steps,
        contactEmail: contacts.get(run.contactId),
        version: versions.get(run.definitionId),
        limit: TIMELINE_LIMIT,
      }),
    );
  });
}
