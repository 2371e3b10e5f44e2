import type { ApiServices } from '../../api-composition.ts';
import { STEP_TYPES, type StepType } from '../automations/automation-definition.ts';
import type { AutomationWithStats } from '../automations/automations.service.ts';
import type { EditorModel } from './dashboard-automation-editor.pages.ts';
import type { AutomationViews } from './dashboard-automation-views.ts';
import { exitsOf } from './dashboard-automations.builder.ts';
import { builderFits } from './dashboard-automations.fits.ts';
import { addStep, removeStep } from './dashboard-automations.flow.ts';
import { editorFields, problemsOf, sentDefinition } from './dashboard-automations.forms.ts';
import { BASE, newAutomationPage, OWNER_ONLY_NOTE } from './dashboard-automations.pages.ts';
import { isError, type DashboardContext, type DashboardKit } from './dashboard-kit.router.ts';

/** One editor post as read: the button, the details typed, the definition sent, and how to answer with the editor again. */
interface EditorPost {
  ctx: DashboardContext;
  found: AutomationWithStats | null;
  action: string;
  name: string;
  description: string;
  definition: ReturnType<typeof sentDefinition>['definition'];
  json: string | null | undefined;
  value: (name: string) => string;
  render: (status: number, extra?: Partial<EditorModel>) => Promise<void>;
}

type Deps = { kit: DashboardKit; views: AutomationViews; automations: ApiServices['automations'] };

/**
 * An editor form's buttons: draw the builder again (from the JSON view too), add or remove a
 * step, validate, publish (creating the automation on the new page), save name and description.
 */
export async function editorPost(ctx: DashboardContext, found: AutomationWithStats | null, deps: Deps): Promise<void> {
  const { kit, views } = deps;
  const fields = editorFields(ctx);
  const value = (name: string) => fields.find(([key]) => key === name)?.[1] ?? '';
  const sent = sentDefinition(fields);
  const post: EditorPost = {
    ctx,
    found,
    action: value('action') || 'refresh',
    name: value('name').trim(),
    description: value('description').replace(/\r\n?/g, '\n'),
    definition: sent.definition,
    json: sent.json,
    value,
    render: async (status, extra = {}) => {
      const input = { name: post.name, description: post.description, definition: post.definition, json: post.json };
      if (found) return views.renderAutomation(ctx, status, found, input, extra);
      kit.send(ctx, status, newAutomationPage(await views.editorModel(ctx, input, extra)));
    },
  };
  if (sent.problem && post.action !== 'details') return post.render(400, { problems: [sent.problem] });
  if (post.action === 'refresh') return post.render(200);
  if (post.action === 'add' || post.action.startsWith('remove:')) return changeSteps(post);
  if (post.action === 'validate') {
    try {
      await views.authoring.validate(kit.signedInOf(ctx).orgId, post.definition);
      return post.render(200, { valid: true });
    } catch (error) {
      const problems = problemsOf(error);
      if (!problems) throw error;
      return post.render(400, { problems });
    }
  }
  if (post.action === 'details' && found) return saveDetails(post, found, deps);
  if (post.action !== 'publish') return post.render(400, { error: 'There is no such button.' });
  return publish(post, deps);
}

/** The name and description's problem, if any. */
const detailsErrorOf = ({ name, description }: EditorPost) =>
  name.length < 1 || name.length > 120
    ? 'Give the automation a name of 1 to 120 characters.'
    : description.length > 2000
      ? 'The description can have 2000 characters at most.'
      : undefined;

/** The builder's add and remove buttons: the definition with a step more or less, drawn again. */
function changeSteps(post: EditorPost): Promise<void> {
  const { definition, action, value, render } = post;
  if (!builderFits(definition))
    return render(400, {
      error: 'The builder cannot change this definition: it is not an object with a list of steps. Fix it in the JSON view.',
    });
  if (action === 'add') {
    const type = value('add_type');
    if (!(STEP_TYPES as readonly string[]).includes(type)) return render(400, { error: 'Choose the type of the new step.' });
    const added = addStep(definition, type as StepType, value('add_slot'));
    if (!added) return render(400, { error: 'Choose where the new step goes.' });
    post.definition = added.definition;
    const index = (added.definition.steps as { id?: string }[]).findIndex((s) => s.id === added.id);
    const onward = exitsOf(type)[0]?.key;
    return render(200, { notice: `Step “${added.id}” added.`, ...(onward ? { slot: `${index}.${onward}` } : {}) });
  }
  const index = Number(action.slice('remove:'.length));
  if (!Number.isInteger(index) || index < 0 || index >= definition.steps.length) return render(400, { error: 'There is no such step.' });
  post.definition = removeStep(definition, index);
  return render(200, { notice: 'Step removed.' });
}

/** The details button: the name and description saved, the definition left as edited. */
async function saveDetails(post: EditorPost, { automation }: AutomationWithStats, { kit, views, automations }: Deps): Promise<void> {
  const { ctx, name, description, definition, json, render } = post;
  const detailsError = detailsErrorOf(post);
  if (detailsError) return render(400, { error: detailsError });
  if (automation.status === 'archived') return render(409, { error: 'An archived automation cannot be edited.' });
  const saved = await automations.updateAutomation(kit.signedInOf(ctx).orgId, automation.id, { name, description });
  return views.renderAutomation(ctx, 200, saved, { name, description, definition, json }, { notice: 'Name and description saved.' });
}

/** The publish button: a new automation created with its first version, or a new version of this one (an active one: owners only). */
async function publish(post: EditorPost, { kit, views, automations }: Deps): Promise<void> {
  const { ctx, name, description, definition, render } = post;
  const signedIn = kit.signedInOf(ctx);
  const automation = post.found?.automation ?? null;
  const detailsError = detailsErrorOf(post);
  if (detailsError) return render(400, { error: detailsError });
  try {
    if (!automation) {
      const created = await views.authoring.create(signedIn.orgId, { name, description, definition });
      ctx.redirect(`${BASE}/${created.id}?created=1`);
      ctx.status = 303;
      return;
    }
    if (automation.status === 'active' && signedIn.role !== 'owner') return render(403, { error: OWNER_ONLY_NOTE });
    const published = await views.authoring.publish(signedIn.orgId, automation.id, definition);
    if (name !== automation.name || description !== automation.description)
      await automations.updateAutomation(signedIn.orgId, automation.id, { name, description });
    ctx.redirect(`${BASE}/${automation.id}?published=${published.version}`);
    ctx.status = 303;
  } catch (error) {
    const problems = problemsOf(error);
    if (problems) return render(400, { problems });
    if (isError(error, 'conflict')) return render(409, { error: 'An archived automation cannot be edited.' });
    if (isError(error, 'not_found')) return kit.notFound(ctx, 'automation');
    if (isError(error, 'invalid_request')) return render(400, { error: error.message });
    throw error;
  }
}
