import { AutomationRun, AutomationRunStep, Contact, type AutomationRunStatus, type AutomationStatus } from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import { createAutomationsAdmin } from '../../src/modules/automations/automations.admin.ts';
import { unique } from './factories.ts';

/** The smallest definition that publishes: a trigger and one exit step (no database references). */
export const EXIT_ONLY_DEFINITION = {
  trigger: { type: 'contact.created' },
  start: 'done',
  steps: [{ id: 'done', type: 'exit' }],
};

/** An automation in `status` with EXIT_ONLY_DEFINITION (or `definition`) published as version 1, as an operator creates it. */
export async function createPublishedAutomation(
  orm: MikroORM,
  orgId: string,
  options: { status?: AutomationStatus; definition?: unknown; name?: string } = {},
) {
  return createAutomationsAdmin({ orm }).createAutomation({
    orgId,
    name: options.name ?? unique('automation'),
    definition: options.definition ?? EXIT_ONLY_DEFINITION,
    ...(options.status ? { status: options.status } : {}),
  });
}

export async function insertContact(orm: MikroORM, orgId: string): Promise<Contact> {
  const em = scopeToOrg(orm.em, orgId);
  const contact = em.create(Contact, { orgId, email: `${unique('run')}@example.com` });
  await em.flush();
  return contact;
}

/** A run written directly (as enrolment and the drain would), active at step `stepId` unless told otherwise. */
export async function insertRun(
  orm: MikroORM,
  orgId: string,
  automation: { id: string; definitionId?: string | null | undefined },
  options: {
    id?: string;
    contactId?: string;
    status?: AutomationRunStatus;
    stepId?: string | null;
    waitingFor?: string | null;
    createdAt?: Date;
    exitReason?: string;
    error?: string;
  } = {},
): Promise<AutomationRun> {
  const em = scopeToOrg(orm.em, orgId);
  const status = options.status ?? 'active';
  const run = em.create(AutomationRun, {
    ...(options.id ? { id: options.id } : {}),
    orgId,
    automationId: automation.id,
    definitionId: automation.definitionId!,
    contactId: options.contactId ?? (await insertContact(orm, orgId)).id,
    status,
    stepId: options.stepId === undefined ? 'done' : options.stepId,
    dueAt: status === 'active' ? new Date(Date.now() + 3_600_000) : null,
    waitingFor: options.waitingFor ?? null,
    exitReason: options.exitReason ?? null,
    error: options.error ?? null,
    endedAt: status === 'active' ? null : new Date(),
    ...(options.createdAt ? { createdAt: options.createdAt, updatedAt: options.createdAt } : {}),
  });
  await em.flush();
  return run;
}

export async function insertRunStep(
  orm: MikroORM,
  orgId: string,
  runId: string,
  entry: { stepId: string; kind: string; outcome: string; detail?: Record<string, unknown>; createdAt?: Date },
): Promise<AutomationRunStep> {
  const em = scopeToOrg(orm.em, orgId);
  const step = em.create(AutomationRunStep, {
    orgId,
    runId,
    stepId: entry.stepId,
    kind: entry.kind,
    outcome: entry.outcome,
    detail: entry.detail ?? {},
    ...(entry.createdAt ? { createdAt: entry.createdAt } : {}),
  });
  await em.flush();
  return step;
}

/** Adds counts to one counter shard of an automation, as the engine's writers do. */
export async function insertStatShard(
  orm: MikroORM,
  orgId: string,
  automationId: string,
  shard: number,
  counts: Partial<Record<'total_runs' | 'active_runs' | 'completed_runs' | 'failed_runs' | 'emails_sent' | 'credits_used', number>>,
): Promise<void> {
  const columns = Object.keys(counts);
  await orm.em
    .fork()
    .execute(
      `insert into automation_stat_shards (automation_id, shard, org_id${columns.map((c) => `, ${c}`).join('')}) values (?, ?, ?${columns.map(() => ', ?').join('')})`,
      [automationId, shard, orgId, ...Object.values(counts)],
    );
}
