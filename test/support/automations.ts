import type { Client } from '@temporalio/client';
import { Automation, Contact, Template, type Domain } from '../../db/entities/index.ts';
import { scopeToOrg, type MikroORM } from '../../db/orm.ts';
import type { Config } from '../../src/config.ts';
import { createAutomationAuthoring } from '../../src/modules/automations/automation-authoring.ts';
import { enrolContacts, type Enrolment } from '../../src/modules/automations/automation-runs.repo.ts';
import { readStats } from '../../src/modules/automations/automation-stats.repo.ts';
import { wakeActors } from '../../src/temporal/actor-wake.ts';
import { automationActorContract } from '../../workflows/automation.ts';
import { unique } from './factories.ts';

/** A published template of the workspace. */
export async function addPublishedTemplate(orm: MikroORM, orgId: string, fields: { subject: string; html: string }): Promise<Template> {
  const em = scopeToOrg(orm.em.fork(), orgId);
  const template = em.create(Template, { orgId, name: unique('template'), status: 'published', ...fields });
  await em.flush();
  return template;
}

/** An automation with `definition` published, set active. */
export async function addActiveAutomation(orm: MikroORM, orgId: string, definition: unknown): Promise<Automation> {
  const automation = await createAutomationAuthoring({ orm }).create(orgId, { name: unique('automation'), definition });
  const em = scopeToOrg(orm.em.fork(), orgId);
  await em.nativeUpdate(Automation, { id: automation.id }, { status: 'active' });
  return automation;
}

/** Enrols contacts as a trigger would (in one transaction), then wakes the touched automations' actors. */
export async function enrolAndWake(orm: MikroORM, client: Client, config: Pick<Config, 'temporal'>, enrolment: Enrolment) {
  const touched = await scopeToOrg(orm.em.fork(), enrolment.orgId).transactional((em) => enrolContacts(em, enrolment));
  await wakeActors(
    client,
    config,
    automationActorContract,
    touched.map((t) => ({ orgId: t.orgId, automationId: t.automationId })),
  );
  return touched;
}

export async function addContacts(orm: MikroORM, orgId: string, emails: readonly string[], fields: Partial<Contact> = {}) {
  const em = scopeToOrg(orm.em.fork(), orgId);
  const contacts = emails.map((email) => em.create(Contact, { orgId, email, ...fields }));
  await em.flush();
  return contacts;
}

export async function statsOf(orm: MikroORM, orgId: string, automationId: string) {
  return (await readStats(scopeToOrg(orm.em.fork(), orgId), orgId, [automationId])).get(automationId)!;
}

/** A send step's sender on the domain. */
export const senderOn = (domain: Domain) => `hello@${domain.domain}`;
