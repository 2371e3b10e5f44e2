import type { MikroORM } from '@mikro-orm/postgresql';
import type { ApiServices } from '../../api-composition.ts';
import { createAutomationAuthoring } from '../automations/automation-authoring.ts';
import type { AutomationWithStats } from '../automations/automations.service.ts';
import type { EditorModel } from './dashboard-automation-editor.pages.ts';
import { builderFits } from './dashboard-automations.fits.ts';
import { createBuilderChoices, createEditorForms, pretty, STARTER_DEFINITION } from './dashboard-automations.forms.ts';
import { automationPage } from './dashboard-automations.pages.ts';
import { createAutomationPagesReader } from './dashboard-automations.repo.ts';
import { orNotFound, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

const ID = /^[0-9a-f]{24}$/;

/** What an automation's editor shows: its name, description and definition as edited (the JSON view's text when sent). */
export interface EditorInput {
  name: string;
  description: string;
  definition: unknown;
  json?: string | null;
}

export type AutomationViews = ReturnType<typeof createAutomationViews>;

/**
 * What the automations routes share: the authoring service and the pages' reader, the editor's
 * form parser, the workspace's automation of a request, and the editor's renderers.
 */
export function createAutomationViews(services: ApiServices, orm: MikroORM, kit: DashboardKit) {
  const { automations, templates, segments, webhooks, domains } = services;
  const authoring = createAutomationAuthoring({ orm });
  const choicesOf = createBuilderChoices({ templates, segments, webhooks, domains });

  /** The workspace's automation `id` with its counters, or null when it has none. */
  async function automationOf(ctx: DashboardContext, id: string): Promise<AutomationWithStats | null> {
    if (!ID.test(id)) return null;
    return orNotFound(automations.getAutomation(kit.signedInOf(ctx).orgId, id));
  }

  /** The editor's model for `definition` as edited: the builder drawn from it, the JSON view its text. */
  async function editorModel(ctx: DashboardContext, input: EditorInput, extra: Partial<EditorModel>): Promise<EditorModel> {
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
    input?: EditorInput,
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

  return {
    authoring,
    reader: createAutomationPagesReader({ orm }),
    editorForms: createEditorForms(),
    automationOf,
    editorModel,
    renderAutomation,
  };
}
