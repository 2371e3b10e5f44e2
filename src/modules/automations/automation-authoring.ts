/**
 * Authoring an automation (the dashboard and the operator CLI; the API cannot edit a workflow):
 * create one, publish a definition, read the published one. Publishing checks the definition
 * as a whole (automation-definition.ts) and then everything it names against the workspace: a
 * published template, a sender on a verified domain, the workspace's own segments and webhook
 * endpoints. A published definition is immutable (automation_definitions); publishing increments
 * the automation's `version`, and runs in flight keep the definition they started on.
 */
import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Automation, AutomationDefinition, Domain, Segment, Template, WebhookEndpoint } from '../../../db/entities/index.ts';
import { scopeToOrg, type EntityManager } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import {
  parseDefinition,
  triggerKey,
  type AutomationDefinition as Definition,
  type Condition,
  type DefinitionProblem,
} from './automation-definition.ts';

function refused(problems: DefinitionProblem[]): AppError {
  const first = problems[0]!;
  return new AppError('invalid_request', `Invalid definition: ${first.path}: ${first.message}.`, {
    reason: 'DEFINITION_INVALID',
    fields: problems.map((p) => ({ path: `definition.${p.path}`, location: 'body', type: 'definition', message: p.message })),
  });
}

function conditionSegments(condition: Condition): string[] {
  if ('in_segment' in condition) return [condition.in_segment];
  if ('all' in condition) return condition.all.flatMap(conditionSegments);
  if ('any' in condition) return condition.any.flatMap(conditionSegments);
  if ('not' in condition) return conditionSegments(condition.not);
  return [];
}

/** What a definition names in the database, each with where it is named. */
function references(definition: Definition) {
  const templates: [string, string][] = [];
  const senders: [string, string][] = [];
  const segments: [string, string][] = [];
  const endpoints: [string, string][] = [];
  if (definition.trigger.type === 'segment.joined') segments.push([definition.trigger.segment_id, 'trigger.segment_id']);
  if ((definition.trigger.type === 'email.opened' || definition.trigger.type === 'email.clicked') && definition.trigger.template_id)
    templates.push([definition.trigger.template_id, 'trigger.template_id']);
  if (definition.goal && 'in_segment' in definition.goal) segments.push([definition.goal.in_segment, 'goal.in_segment']);
  definition.steps.forEach((step, index) => {
    const at = `steps.${index}`;
    if (step.type === 'send_email') {
      templates.push([step.template_id, `${at}.template_id`]);
      senders.push([step.from, `${at}.from`]);
    }
    if (step.type === 'add_to_segment' || step.type === 'remove_from_segment') segments.push([step.segment_id, `${at}.segment_id`]);
    if (step.type === 'condition') for (const id of conditionSegments(step.if)) segments.push([id, `${at}.if`]);
    if (step.type === 'webhook') endpoints.push([step.endpoint_id, `${at}.endpoint_id`]);
  });
  return { templates, senders, segments, endpoints };
}

/** Problems with what the definition names: missing or unpublished templates, unverified senders, other workspaces' segments and endpoints. */
async function referenceProblems(em: EntityManager, definition: Definition): Promise<DefinitionProblem[]> {
  const refs = references(definition);
  const problems: DefinitionProblem[] = [];
  const templates = new Map((await em.find(Template, { id: { $in: refs.templates.map(([id]) => id) } })).map((t) => [t.id, t]));
  for (const [id, path] of refs.templates) {
    const template = templates.get(id);
    if (!template) problems.push({ path, message: `template ${id} does not exist in this workspace` });
    else if (template.status !== 'published') problems.push({ path, message: `template ${id} is ${template.status}, not published` });
  }
  const domainNames = refs.senders.map(([from]) => from.slice(from.lastIndexOf('@') + 1).toLowerCase());
  const domains = new Map((await em.find(Domain, { domain: { $in: domainNames } })).map((d) => [d.domain, d]));
  refs.senders.forEach(([from, path], i) => {
    const domain = domains.get(domainNames[i]!);
    if (!domain) problems.push({ path, message: `${domainNames[i]} is not a sending domain of this workspace` });
    else if (domain.status !== 'verified')
      problems.push({ path, message: `the domain ${domain.domain} is ${domain.status}, not verified` });
    else if (!from.includes('@')) problems.push({ path, message: 'must be an address' });
  });
  const segments = new Set((await em.find(Segment, { id: { $in: refs.segments.map(([id]) => id) } })).map((s) => s.id));
  for (const [id, path] of refs.segments)
    if (!segments.has(id)) problems.push({ path, message: `segment ${id} does not exist in this workspace` });
  const endpoints = new Set((await em.find(WebhookEndpoint, { id: { $in: refs.endpoints.map(([id]) => id) } })).map((w) => w.id));
  for (const [id, path] of refs.endpoints)
    if (!endpoints.has(id)) problems.push({ path, message: `webhook endpoint ${id} does not exist in this workspace` });
  return problems;
}

export function createAutomationAuthoring({ orm }: { orm: MikroORM }) {
  /** The definition parsed and checked against the workspace; throws 400 DEFINITION_INVALID with every problem. */
  async function check(em: EntityManager, input: unknown): Promise<Definition> {
    const parsed = parseDefinition(input);
    if (!parsed.ok) throw refused(parsed.problems);
    const problems = await referenceProblems(em, parsed.definition);
    if (problems.length > 0) throw refused(problems);
    return parsed.definition;
  }

  return {
    /** Checks a definition without publishing it (the dashboard's Validate). */
    async validate(orgId: string, input: unknown): Promise<Definition> {
      return check(scopeToOrg(orm.em.fork(), orgId), input);
    },

    /** A new automation in `draft`, with its definition published as version 1 when one is given. */
    async create(orgId: string, input: { name: string; description?: string; definition?: unknown }): Promise<Automation> {
      const name = input.name.trim();
      if (name.length < 1 || name.length > 120) throw new AppError('invalid_request', 'Invalid name: must be 1 to 120 characters.');
      if ((input.description ?? '').length > 2000) throw new AppError('invalid_request', 'Invalid description: at most 2000 characters.');
      return scopeToOrg(orm.em.fork(), orgId).transactional(async (em) => {
        const definition = input.definition === undefined ? null : await check(em, input.definition);
        const automation = em.create(Automation, {
          orgId,
          name,
          description: input.description ?? '',
          triggerType: definition?.trigger.type ?? 'none',
          triggerKey: definition ? triggerKey(definition.trigger) : null,
        });
        await em.flush();
        if (definition) {
          const row = em.create(AutomationDefinition, { orgId, automationId: automation.id, version: automation.version, definition });
          automation.definitionId = row.id;
        }
        return automation;
      });
    },

    /**
     * Publishes a new definition: checked, stored as the automation's next version, and used by
     * runs that start from now on. An archived automation cannot be edited (409).
     */
    async publish(orgId: string, automationId: string, input: unknown): Promise<Automation> {
      return scopeToOrg(orm.em.fork(), orgId).transactional(async (em) => {
        const automation = await em.findOne(Automation, { id: automationId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!automation) throw new AppError('not_found', `Automation ${automationId} does not exist.`);
        if (automation.status === 'archived')
          throw new AppError('conflict', `Automation ${automationId} is archived and cannot be edited.`, { reason: 'AUTOMATION_ARCHIVED' });
        const definition = await check(em, input);
        automation.version += 1;
        automation.triggerType = definition.trigger.type;
        automation.triggerKey = triggerKey(definition.trigger);
        const row = em.create(AutomationDefinition, { orgId, automationId, version: automation.version, definition });
        automation.definitionId = row.id;
        return automation;
      });
    },

    /** The published definition with its version, or null when none was published. */
    async definition(orgId: string, automationId: string): Promise<{ version: number; definition: Definition } | null> {
      const em = scopeToOrg(orm.em.fork(), orgId);
      const automation = await em.findOne(Automation, { id: automationId });
      if (!automation) throw new AppError('not_found', `Automation ${automationId} does not exist.`);
      if (!automation.definitionId) return null;
      const row = await em.findOneOrFail(AutomationDefinition, { id: automation.definitionId });
      return { version: row.version, definition: row.definition as Definition };
    },
  };
}

export type AutomationAuthoring = ReturnType<typeof createAutomationAuthoring>;
