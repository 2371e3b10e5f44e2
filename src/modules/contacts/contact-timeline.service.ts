import type { MikroORM } from '@mikro-orm/postgresql';
import type { Contact } from '../../../db/entities/index.ts';
import { findContactSegments, findContactTimeline, type TimelineEntry } from './contact-timeline.repo.ts';
import type { ContactsService } from './contacts.service.ts';

/** A contact with the segments it is in and what Herald did with it (its dashboard page). */
export interface ContactOverview {
  contact: Contact;
  segments: { id: string; name: string; type: string }[];
  timeline: TimelineEntry[];
}

/** Reads a contact's overview through the contacts service (404 for a contact of no one or of another workspace). */
export function createContactTimelineService(deps: { orm: MikroORM; contacts: Pick<ContactsService, 'getContact'> }) {
  return {
    async contactOverview(orgId: string, id: string): Promise<ContactOverview> {
      const contact = await deps.contacts.getContact(orgId, id);
      const em = deps.orm.em.fork();
      const [segments, timeline] = await Promise.all([findContactSegments(em, orgId, contact), findContactTimeline(em, orgId, contact)]);
      return { contact, segments, timeline };
    },
  };
}

export type ContactTimelineService = ReturnType<typeof createContactTimelineService>;
