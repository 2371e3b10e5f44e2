import * as v from 'valibot';
import {
  AutomationRun,
  AutomationRunStep,
  Contact,
  type AutomationRunStatus,
  type AutomationStats,
  type Template,
} from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { CreateTemplateBody } from '../../src/modules/templates/templates.schemas.ts';
import { createTemplatesService } from '../../src/modules/templates/templates.service.ts';
import { unique } from './factories.ts';

/**
 * Automation rows written directly, as the engine would (runs, their timelines, counter
 * shards), for tests of what the dashboard shows; and a published template for send steps.
 */

/** A published template of the workspace. */
export async function publishedTemplate(orm: MikroORM, orgId: string, name = unique('template')): Promise<Template> {
  const templates = createTemplatesService({ orm });
  const template = await templates.createTemplate(
    orgId,
    v.parse(CreateTemplateBody, { name, subject: `${name}: welcome aboard`, html: '<p>Welcome aboard.</p>' }),
  );
  return templates.updateTemplate(orgId, template.id, { status: 'published' });
}

export async function insertContact(
  orm: MikroORM,
  orgId: string,
  email = `${unique('contact').toLowerCase()}@example.com`,
): Promise<Contact> {
  const em = scopeToOrg(orm.em, orgId);
  const contact = em.create(Contact, { orgId, email });
  await em.flush();
  return contact;
}

/** One counter shard's values (the page shows the sums over shards). */
export async function insertStatShard(
  orm: MikroORM,
  orgId: string,
  automationId: string,
  shard: number,
  stats: Partial<AutomationStats>,
): Promise<void> {
  await orm.em.fork().execute(
    `insert into automation_stat_shards (automation_id, shard, org_id, total_runs, active_runs, completed_runs, failed_runs, emails_sent, credits_used)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
    [
      automationId,
      shard,
      orgId,
      stats.totalRuns ?? 0,
      stats.activeRuns ?? 0,
      stats.completedRuns ?? 0,
      stats.failedRuns ?? 0,
      stats.emailsSent ?? 0,
      stats.creditsUsed ?? 0,
    ],
  );
}

export async function insertRun(
  orm: MikroORM,
  orgId: string,
  input: {
    automationId: string;
    definitionId: string;
    contactId: string;
    status?: AutomationRunStatus;
    stepId?: string | null;
    waitingFor?: string | null;
    exitReason?: string | null;
    error?: string | null;
    createdAt?: Date;
  },
): Promise<AutomationRun> {
  const em = scopeToOrg(orm.em, orgId);
  const status = input.status ?? 'active';
  const createdAt = input.createdAt ?? new Date();
  const run = em.create(AutomationRun, {
    orgId,
    automationId: input.automationId,
    definitionId: input.definitionId,
    contactId: input.contactId,
    status,
    stepId: input.stepId ?? null,
    dueAt: status === 'active' ? new Date(createdAt.getTime() + 3_600_000) : null,
    waitingFor: input.waitingFor ?? null,
    exitReason: input.exitReason ?? null,
    error: input.error ?? null,
    endedAt: status === 'active' ? null : new Date(createdAt.getTime() + 60_000),
    createdAt,
    updatedAt: createdAt,
  });
  await em.flush();
  return run;
}

/** Timeline entries of a run, in order, a second apart from `from`. */
export async function insertRunSteps(
  orm: MikroORM,
  orgId: string,
  runId: string,
  entries: readonly { stepId: string; kind: string; outcome: string; detail?: Record<string, unknown> }[],
  from = new Date(),
): Promise<AutomationRunStep[]> {
  const em = scopeToOrg(orm.em, orgId);
  const rows = entries.map((entry, i) =>
    em.create(AutomationRunStep, { orgId, runId, ...entry, detail: entry.detail ?? {}, createdAt: new Date(from.getTime() + i * 1000) }),
  );
  await em.flush();
  return rows;
}
