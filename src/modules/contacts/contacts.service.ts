import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { Contact } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { recordEvent } from '../events/events.fns.ts';
import { normalizeEmail } from './contacts.fns.ts';
import type { CreateContactInput } from './contacts.schemas.ts';
import { serializeContact } from './contacts.serializer.ts';

const notFound = (id: string) => new AppError('not_found', `Contact ${id} does not exist.`);

/** Contacts of one workspace at a time; every query runs through a workspace-scoped EntityManager. */
export function createContactsService({ orm }: { orm: MikroORM }) {
  return {
    /** Newest first, keyset-paginated on (createdAt, id). */
    async listContacts(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), Contact, {}, {
        sortField: 'createdAt',
        direction: 'desc',
        limit: page.limit,
        after: page.after,
      });
    },

    async getContact(orgId: string, id: string): Promise<Contact> {
      const contact = await scopeToOrg(orm.em, orgId).findOne(Contact, { id });
      if (!contact) throw notFound(id);
      return contact;
    },

    /** Creates a contact and its contact.created event in one transaction; 409 on a taken email. */
    async createContact(orgId: string, input: CreateContactInput): Promise<Contact> {
      const email = normalizeEmail(input.email);
      try {
        return await scopeToOrg(orm.em, orgId).transactional(async (em) => {
          const contact = em.create(Contact, {
            orgId,
            email,
            firstName: input.first_name ?? '',
            lastName: input.last_name ?? '',
            company: input.company ?? '',
            tags: [...new Set(input.tags)],
            customFields: input.custom_fields,
          });
          await em.flush();
          recordEvent(em, orgId, 'contact.created', { contact: serializeContact(contact) });
          return contact;
        });
      } catch (error) {
        if (error instanceof UniqueConstraintViolationException) {
          throw new AppError('conflict', `A contact with email ${email} already exists.`, { field: 'email' });
        }
        throw error;
      }
    },
  };
}

export type ContactsService = ReturnType<typeof createContactsService>;
