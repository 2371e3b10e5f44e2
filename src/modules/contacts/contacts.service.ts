import { LockMode, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';
import type { Readable } from 'node:stream';
import { Contact, ContactEvent, SegmentMember, type ContactStatus } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { DnsResolver } from '../../dns/resolver.ts';
import { AppError } from '../../errors.ts';
import type { EventType } from '../events/events.schemas.ts';
import { recordEvent } from '../events/events.fns.ts';
import { normalizeEmail } from './contacts.fns.ts';
import type { CreateContactInput, UpdateContactInput } from './contacts.schemas.ts';
import { serializeContact } from './contacts.serializer.ts';
import { listContactPage } from './contacts.repo.ts';
import { exportContactsCsv } from './contacts-export.ts';
import type { CsvOptions } from './csv.ts';
import { findSegmentRule } from '../segments/segments.repo.ts';
import { createEmailQuality } from './email-quality.ts';
import { enrolContactChanges } from '../automations/automation-triggers.ts';
import type { TouchedAutomation } from '../automations/automation-runs.repo.ts';
import type { AutomationWaker } from '../automations/automation-wake.ts';

const notFound = (id: string) => new AppError('not_found', `Contact ${id} does not exist.`);

/** The event a move into a status emits, besides contact.updated. */
const STATUS_EVENTS: Partial<Record<ContactStatus, EventType>> = {
  unsubscribed: 'contact.unsubscribed',
  suppressed: 'contact.suppressed',
  bounced: 'contact.bounced',
  complained: 'contact.complained',
};

function duplicate(email: string): AppError {
  return new AppError('conflict', `A contact with email ${email} already exists.`, { field: 'email' });
}

/**
 * Contacts of one workspace at a time; every query runs through a workspace-scoped
 * EntityManager, and every change writes its events and starts the automation runs it
 * triggers (created, tags added, tag segments joined) in the same transaction; the automations
 * are woken after the commit.
 */
export function createContactsService(deps: {
  orm: MikroORM;
  dns: DnsResolver;
  checkMailServer: boolean;
  wakeAutomations: AutomationWaker;
}) {
  const { orm } = deps;
  const quality = createEmailQuality(deps);

  async function assertDeliverable(email: string): Promise<void> {
    const verdict = await quality.check(email);
    if (!verdict.ok) {
      throw new AppError('unprocessable_entity', `The address failed quality validation: ${verdict.message}`, {
        reason: verdict.reason,
        field: 'email',
      });
    }
  }

  /** Runs `work` in a transaction (409 for a taken email), then wakes the automations it gave runs. */
  async function inTransaction<T>(
    orgId: string,
    email: string,
    work: (em: EntityManager) => Promise<{ result: T; touched: TouchedAutomation[] }>,
  ): Promise<T> {
    try {
      const { result, touched } = await scopeToOrg(orm.em, orgId).transactional(work);
      deps.wakeAutomations(touched);
      return result;
    } catch (error) {
      if (error instanceof UniqueConstraintViolationException) throw duplicate(email);
      throw error;
    }
  }

  return {
    /**
     * Newest first, keyset-paginated on (createdAt, id); optional exact email, status and tag
     * filters, a search of a part of the email and name (`search`) and of their prefix (`prefix`).
     */
    async listContacts(
      orgId: string,
      page: { limit: number; after?: KeysetPosition | undefined },
      filters: {
        email?: string | undefined;
        status?: ContactStatus | undefined;
        tag?: string | undefined;
        search?: string | undefined;
        prefix?: string | undefined;
      } = {},
    ) {
      return listContactPage(orm.em, orgId, page, {
        email: filters.email ? normalizeEmail(filters.email) : undefined,
        status: filters.status,
        tag: filters.tag,
        search: filters.search,
        prefix: filters.prefix,
      });
    },

    /** The CSV export of the workspace's contacts or a segment's (404 for an unknown segment); see contacts-export.ts. */
    async exportContacts(
      orgId: string,
      filter: { status?: ContactStatus | undefined; segmentId?: string | undefined },
      csv: CsvOptions,
    ): Promise<Readable> {
      const em = orm.em.fork();
      const segment = filter.segmentId ? await findSegmentRule(em, orgId, filter.segmentId) : undefined;
      return exportContactsCsv(em, orgId, { status: filter.status, segment }, csv);
    },

    async getContact(orgId: string, id: string): Promise<Contact> {
      const contact = await scopeToOrg(orm.em, orgId).findOne(Contact, { id });
      if (!contact) throw notFound(id);
      return contact;
    },

    /** Creates a contact (422 for an address that fails quality checks, 409 for a taken email). */
    async createContact(orgId: string, input: CreateContactInput): Promise<Contact> {
      const email = normalizeEmail(input.email);
      await assertDeliverable(email);
      return inTransaction(orgId, email, async (em) => {
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
        const touched = await enrolContactChanges(em, orgId, [
          { contactId: contact.id, created: true, tagsBefore: [], tagsAfter: contact.tags },
        ]);
        return { result: contact, touched };
      });
    },

    /**
     * Applies the given fields. A new email is normalised, quality-checked and must be free
     * (409); a status move emits contact.<status> (for unsubscribed, suppressed, bounced,
     * complained) besides contact.updated. A PATCH that changes nothing writes no event.
     */
    async updateContact(orgId: string, id: string, input: UpdateContactInput): Promise<Contact> {
      const email = input.email === undefined ? undefined : normalizeEmail(input.email);
      const current = await this.getContact(orgId, id);
      if (email !== undefined && email !== current.email) await assertDeliverable(email);
      return inTransaction(orgId, email ?? current.email, async (em) => {
        const contact = await em.findOne(Contact, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!contact) throw notFound(id);
        const previousStatus: ContactStatus = contact.status;
        const previousTags = [...contact.tags];
        const wanted = {
          email,
          firstName: input.first_name,
          lastName: input.last_name,
          company: input.company,
          tags: input.tags && [...new Set(input.tags)],
          customFields: input.custom_fields,
          status: input.status,
        };
        const changes = Object.fromEntries(
          Object.entries(wanted).filter(
            ([key, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(contact[key as keyof typeof wanted]),
          ),
        ) as Partial<Contact>;
        if (Object.keys(changes).length === 0) return { result: contact, touched: [] };
        em.assign(contact, changes);
        await em.flush();
        const changedFields = Object.keys(changes);
        recordEvent(em, orgId, 'contact.updated', { contact: serializeContact(contact), changed_fields: changedFields });
        const status: ContactStatus = contact.status;
        const statusEvent = status !== previousStatus ? STATUS_EVENTS[status] : undefined;
        if (statusEvent) recordEvent(em, orgId, statusEvent, { contact: serializeContact(contact), previous_status: previousStatus });
        const touched = await enrolContactChanges(em, orgId, [
          { contactId: contact.id, created: false, tagsBefore: previousTags, tagsAfter: contact.tags },
        ]);
        return { result: contact, touched };
      });
    },

    /** Deletes a contact and writes contact.deleted with its last state. */
    async deleteContact(orgId: string, id: string): Promise<{ _id: string; deleted: true }> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const contact = await em.findOne(Contact, { id });
        if (!contact) throw notFound(id);
        const last = serializeContact(contact);
        em.remove(contact);
        await em.nativeDelete(SegmentMember, { orgId, contactId: id });
        await em.nativeDelete(ContactEvent, { orgId, contactId: id });
        await em.flush();
        recordEvent(em, orgId, 'contact.deleted', { contact: last });
        return { _id: id, deleted: true as const };
      });
    },
  };
}

export type ContactsService = ReturnType<typeof createContactsService>;
