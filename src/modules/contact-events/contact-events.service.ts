import type { MikroORM } from '@mikro-orm/postgresql';
import { Contact, ContactEvent } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { fireContactEvent } from '../automations/automation-triggers.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';
import { normalizeEmail } from '../contacts/contacts.fns.ts';

/** What a contact's custom event is: its name, the contact by id or address, its properties. */
export interface ContactEventInput {
  event: string;
  email?: string | undefined;
  contact_id?: string | undefined;
  properties: Record<string, unknown>;
}

/**
 * Custom events of contacts: each is stored (for automations' `had_event`) and, in the same
 * transaction, starts the `event` automations of its name and resumes the contact's runs
 * waiting for it; the automations are woken after the commit.
 */
export function createContactEventsService({ orm, wakeAutomations }: { orm: MikroORM; wakeAutomations: AutomationWaker }) {
  return {
    /**
     * Records an event of the workspace's contact named by `contact_id` or `email` (404 when
     * there is none; a contact of any status records it).
     */
    async trackEvent(orgId: string, input: ContactEventInput) {
      const { event, runsStarted, touched, automationsResumed } = await scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const contact = await em.findOne(
          Contact,
          input.contact_id !== undefined ? { id: input.contact_id.toLowerCase() } : { email: normalizeEmail(input.email ?? '') },
        );
        if (!contact) {
          throw new AppError('not_found', `Contact ${input.contact_id ?? input.email ?? ''} does not exist.`, {
            field: input.contact_id !== undefined ? 'contact_id' : 'email',
          });
        }
        const row = em.create(ContactEvent, { orgId, contactId: contact.id, name: input.event, properties: input.properties });
        await em.flush();
        const outcome = await fireContactEvent(em, {
          orgId,
          contactId: contact.id,
          eventId: row.id,
          name: row.name,
          properties: row.properties,
        });
        return {
          event: row,
          runsStarted: outcome.started.length,
          automationsResumed: outcome.resumed.length,
          touched: [...outcome.started, ...outcome.resumed],
        };
      });
      wakeAutomations(touched);
      return { event, runsStarted, automationsResumed };
    },
  };
}

export type ContactEventsService = ReturnType<typeof createContactEventsService>;
