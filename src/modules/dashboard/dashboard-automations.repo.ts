/**
 * What the automations pages read beside the services the API uses (the automations service,
 * the run history): the email addresses of the runs' contacts, and how many runs archiving would
 * end. Entity queries through a workspace-scoped EntityManager.
 */
import type { MikroORM } from '@mikro-orm/postgresql';
import { AutomationRun, Contact } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';

export function createAutomationPagesReader({ orm }: { orm: MikroORM }) {
  return {
    /** How many runs of the automation are still open (what archiving ends). */
    openRuns(orgId: string, automationId: string): Promise<number> {
      return scopeToOrg(orm.em, orgId).count(AutomationRun, { automationId, status: 'active' });
    },

    /** The email addresses of some contacts of the workspace, by id (a deleted contact is absent). */
    async contactEmails(orgId: string, contactIds: readonly string[]): Promise<Map<string, string>> {
      if (contactIds.length === 0) return new Map();
      const contacts = await scopeToOrg(orm.em, orgId).find(
        Contact,
        { id: { $in: [...new Set(contactIds)] } },
        { fields: ['id', 'email'] },
      );
      return new Map(contacts.map((contact) => [contact.id, contact.email]));
    },
  };
}

export type AutomationPagesReader = ReturnType<typeof createAutomationPagesReader>;
