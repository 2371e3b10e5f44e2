import type { MikroORM } from '@mikro-orm/postgresql';
import type { ApiServices } from '../../api-composition.ts';
import { createAutomationAuthoring } from '../automations/automation-authoring.ts';
import type { AutomationWithStats } from '../automations/automations.service.ts';
import { STEP_TYPES, type StepType } from '../automations/automation-definition.ts';
import type { EditorModel } from './dashboard-automation-editor.pages.ts';
import { exitsOf } from './dashboard-automations.builder.ts';
import { builderFits } from './dashboard-automations.fits.ts';
import {
  createBuilderChoices,
  createEditorForms,
  editorFields,
  pretty,
  problemsOf,
  sentDefinition,
  STARTER_DEFINITION,
} from './dashboard-automations.forms.ts';
import { addStep, removeStep } from './dashboard-automations.flow.ts';
import { archivePage, automationPage, automationsPage, BASE, newAutomationPage, OWNER_ONLY_NOTE } from './dashboard-automations.pages.ts';
import { createAutomationPagesReader } from './dashboard-automations.repo.ts';
import { automationRunsRoutes } from './dashboard-automation-runs.routes.ts';
import { olderOf, positionOf } from './dashboard-webhooks.routes.ts';
import { isError, orNotFound, form, one, type DashboardArea, type DashboardContext, type DashboardKit } from './dashboard.router.ts';

const PAGE_SIZE = 50;
const ID = /^[0-9a-f]{24}$/;
/**
 * The automations pages of the dashboard (/dashboard/automations): the list with counters,
 * creating and editing a definition (builder and JSON), validating and publishing it through
 * the authoring service, the lifecycle through the automations service the API uses (owners
 * switch an automation on), and an automation's runs and run timelines.
 */
export function automationsArea(services: ApiServices, orm: MikroORM): DashboardArea {
  const { automations, automationHistory, templates, segments, webhooks, domains } = services;
  const authoring = createAutomationAuthoring({ orm });
  const reader = createAutomationPagesReader({ orm });
  const editorForms = createEditorForms();
  const choicesOf = createBuilderChoices({ templates, segments, webhooks, domains });

  return (router, kit: DashboardKit) => {
    const { notFound } = kit;

    /** The workspace's automation `id` with its counters, or null when it has none. */
    async function automationOf(ctx: DashboardContext, id: string): Promise<AutomationWithStats | null> {
      if (!ID.test(id)) return null;
      return orNotFound(automations.getAutomation(kit.signedInOf(ctx).orgId, id));
    }

    /** The editor's model for `definition` as edited: the builder drawn from it, the JSON view its text. */
    async function editorModel(
      ctx: DashboardContext,
      input: { name: string; description: string; definition: unknown; json?: string | null },
      extra: Partial<EditorModel>,
    ): Promise<EditorModel> {
      const signedIn = kit.signedInOf(ctx);
      const drawn = input.definition === undefined ? {} : input.definition;
      const base = builderFits(drawn) ? pretty(drawn) : '';
      return {
        signedIn,
        name: input.name,
        description: input.description,
        definition: drawn,
        json: input.json ?? pretty(drawn),
        base,
        choices: await choicesOf(signedIn.orgId),
        ...extra,
      };
    }

    async function renderAutomation(
      ctx: DashboardContext,
      status: number,
      { automation, stats }: AutomationWithStats,
      input?: { name: string; description: string; definition: unknown; json?: string | null },
      extra: Partial<EditorModel> = {},
    ): Promise<void> {
      const published = await authoring.definition(kit.signedInOf(ctx).orgId, automation.id);
      const shown = input ?? {
        name: automation.name,
        description: automation.description,
        definition: published?.definition ?? STARTER_DEFINITION,
      };
      kit.send(
        ctx,
        status,
        automationPage({
          ...(await editorModel(ctx, shown, extra)),
          automation,
          stats,
          publishedVersion: published?.version ?? null,
        }),
      );
    }

    /**
     * An editor form's buttons: draw the builder again (from the JSON view too), add or remove a
     * step, validate, publish (creating the automation on the new page), save name and description.
     */
    async function editorPost(ctx: DashboardContext, found: AutomationWithStats | null): Promise<void> {
      const signedIn = kit.signedInOf(ctx);
      const automation = found?.automation ?? null;
      const fields = editorFields(ctx);
      const value = (name: string) => fields.find(([key]) => key === name)?.[1] ?? '';
      const action = value('action') || 'refresh';
      const name = value('name').trim();
      const description = value('description').replace(/\r\n?/g, '\n');
      const sent = sentDefinition(fields);
      let definition = sent.definition;
      const render = async (status: number, extra: Partial<EditorModel> = {}) => {
        const input = { name, description, definition, json: sent.json };
        if (found) return renderAutomation(ctx, status, found, input, extra);
        kit.send(ctx, status, newAutomationPage(await editorModel(ctx, input, extra)));
      };
      if (sent.problem && action !== 'details') return render(400, { problems: [sent.problem] });
      const detailsError =
        name.length < 1 || name.length > 120
          ? 'Give the automation a name of 1 to 120 characters.'
          : description.length > 2000
            ? 'The description can have 2000 characters at most.'
            : undefined;

      if (action === 'refresh') return render(200);
      if (action === 'add' || action.startsWith('remove:')) {
        if (!builderFits(definition))
          return render(400, {
            error: 'The builder cannot change this definition: it is not an object with a list of steps. Fix it in the JSON view.',
          });
        if (action === 'add') {
          const type = value('add_type');
          if (!(STEP_TYPES as readonly string[]).includes(type)) return render(400, { error: 'Choose the type of the new step.' });
          const added = addStep(definition, type as StepType, value('add_slot'));
          if (!added) return render(400, { error: 'Choose where the new step goes.' });
          definition = added.definition;
          const index = (added.definition.steps as { id?: string }[]).findIndex((s) => s.id === added.id);
          const onward = exitsOf(type)[0]?.key;
          return render(200, { notice: `Step “${added.id}” added.`, ...(onward ? { slot: `${index}.${onward}` } : {}) });
        }
        const index = Number(action.slice('remove:'.length));
        if (!Number.isInteger(index) || index < 0 || index >= definition.steps.length)
          return render(400, { error: 'There is no such step.' });
        definition = removeStep(definition, index);
        return render(200, { notice: 'Step removed.' });
      }
      if (action === 'validate') {
        try {
          await authoring.validate(signedIn.orgId, definition);
          return render(200, { valid: true });
        } catch (error) {
          const problems = problemsOf(error);
          if (!problems) throw error;
          return render(400, { problems });
        }
      }
      if (action === 'details' && automation) {
        if (detailsError) return render(400, { error: detailsError });
        if (automation.status === 'archived') return render(409, { error: 'An archived automation cannot be edited.' });
        const saved = await automations.updateAutomation(signedIn.orgId, automation.id, { name, description });
        return renderAutomation(
          ctx,
          200,
          saved,
          { name, description, definition, json: sent.json },
          { notice: 'Name and description saved.' },
        );
      }
      if (action !== 'publish') return render(400, { error: 'There is no such button.' });
      if (detailsError) return render(400, { error: detailsError });
      try {
        if (!automation) {
          const created = await authoring.create(signedIn.orgId, { name, description, definition });
          ctx.redirect(`${BASE}/${created.id}?created=1`);
          ctx.status = 303;
          return;
        }
        if (automation.status === 'active' && signedIn.role !== 'owner') return render(403, { error: OWNER_ONLY_NOTE });
        const published = await authoring.publish(signedIn.orgId, automation.id, definition);
        const version = published.version;
        if (name !== automation.name || description !== automation.description)
          await automations.updateAutomation(signedIn.orgId, automation.id, { name, description });
        ctx.redirect(`${BASE}/${automation.id}?published=${version}`);
        ctx.status = 303;
      } catch (error) {
        const problems = problemsOf(error);
        if (problems) return render(400, { problems });
        if (isError(error, 'conflict')) return render(409, { error: 'An archived automation cannot be edited.' });
        if (isError(error, 'not_found')) return notFound(ctx, 'automation');
        if (isError(error, 'invalid_request')) return render(400, { error: error.message });
        throw error;
      }
    }

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
      kit.send(ctx, 200, newAutomationPage(await editorModel(ctx, { name: '', description: '', definition: STARTER_DEFINITION }, {})));
    });

    router.post('/automations/new', editorForms, kit.requireSession, (ctx) => editorPost(ctx, null));

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

    router.post('/automations/:id', editorForms, kit.requireSession, async (ctx) => {
      const found = await automationOf(ctx, ctx.params.id ?? '');
      if (!found) return notFound(ctx, 'automation');
      await editorPost(ctx, found);
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

    automationRunsRoutes(router, kit, { history: automationHistory, contacts: reader, automationOf });
  };
}
