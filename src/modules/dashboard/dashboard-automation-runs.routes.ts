import type Router from '@koa/router';
import { AUTOMATION_RUN_STATUSES, type AutomationRunStatus } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import type { HeraldState } from '../../http/state.ts';
import type { AutomationHistory } from '../automations/automation-history.service.ts';
import type { AutomationWithStats } from '../automations/automations.service.ts';
import { runPage, runsPage } from './dashboard-automation-runs.pages.ts';
import type { AutomationPagesReader } from './dashboard-automations.repo.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import { one, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

const PAGE_SIZE = 50;
const ID = /^[0-9a-f]{24}$/;

/**
 * An automation's runs (/dashboard/automations/:id/runs: newest first, a status filter, keyset
 * pages) and one run's timeline, through the run history the API reads them with.
 */
export function automationRunsRoutes(
  router: Router<HeraldState>,
  kit: DashboardKit,
  deps: {
    history: AutomationHistory;
    contacts: AutomationPagesReader;
    automationOf: (ctx: DashboardContext, id: string) => Promise<AutomationWithStats | null>;
  },
): void {
  const { history, contacts, automationOf } = deps;
  const { notFound } = kit;

  router.get('/automations/:id/runs', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const found = await automationOf(ctx, ctx.params.id ?? '');
    if (!found) return notFound(ctx, 'automation');
    const { automation, stats } = found;
    const wanted = one(ctx.query.status);
    const status = (AUTOMATION_RUN_STATUSES as readonly string[]).includes(wanted) ? (wanted as AutomationRunStatus) : undefined;
    const page = await history.listRuns(
      signedIn.orgId,
      automation.id,
      { limit: PAGE_SIZE, after: positionOf(ctx.query.older) },
      status ? { status } : {},
    );
    const emails = await contacts.contactEmails(
      signedIn.orgId,
      page.items.map((run) => run.contactId),
    );
    const last = page.items.at(-1);
    kit.send(
      ctx,
      200,
      runsPage({
        signedIn,
        automation,
        stats,
        runs: page.items,
        contacts: emails,
        versions: page.versions,
        status,
        older: page.hasMore && last ? olderOf({ sortValue: last.createdAt, id: last.id }) : undefined,
      }),
    );
  });

  router.get('/automations/:id/runs/:runId', kit.requireSession, async (ctx) => {
    const signedIn = kit.signedInOf(ctx);
    const automation = (await automationOf(ctx, ctx.params.id ?? ''))?.automation;
    if (!automation) return notFound(ctx, 'automation');
    const runId = ctx.params.runId ?? '';
    let found;
    try {
      found = ID.test(runId) ? await history.getRun(signedIn.orgId, automation.id, runId) : null;
    } catch (error) {
      if (!(error instanceof AppError) || error.code !== 'not_found') throw error;
      found = null;
    }
    if (!found) return notFound(ctx, 'run of this automation');
    const emails = await contacts.contactEmails(signedIn.orgId, [found.run.contactId]);
    kit.send(
      ctx,
      200,
      runPage({
        signedIn,
        automation,
        run: found.run,
        steps: found.timeline,
        contactEmail: emails.get(found.run.contactId),
        version: found.version,
      }),
    );
  });
}
