/**
 * What Herald did with one contact, for its dashboard page: the emails sent to its address with
 * their events, its automation runs, its custom events, the imports that named it and its
 * suppression, and the segments it
 * is in now. Kysely queries through `workspaceDb` (the workspace's condition on every table);
 * each reads an index by the contact's id or address and is bounded, so the cost does not grow
 * with the workspace.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { workspaceDb } from '../../../db/workspace-db.ts';

/** Items per kind on the timeline (the newest). */
export const TIMELINE_LIMIT = 25;

export type TimelineKind = 'email' | 'email_event' | 'automation_run' | 'event' | 'suppression' | 'import';

/** One thing that happened, for the timeline. */
export interface TimelineEntry {
  at: Date;
  kind: TimelineKind;
  /** The state or type: an email's recipient status, an event type, a run's status, a suppression reason, what an import did. */
  label: string;
  /** What it was about: a subject, an automation's or event's name. */
  title: string;
  /** The dashboard page it links to, when it has one. */
  href: string | null;
}

/** A timestamp as PostgreSQL prints it (`2026-11-27 15:50:00.123+00`) → a Date. */
const dateOf = (text: string | Date) => (text instanceof Date ? text : new Date(text.replace(' ', 'T').replace(/([+-]\d\d)$/, '$1:00')));

/** The contact's timeline, newest first. */
export async function findContactTimeline(
  em: EntityManager,
  orgId: string,
  contact: { id: string; email: string },
): Promise<TimelineEntry[]> {
  const db = workspaceDb(em, orgId);
  const [emails, runs, events, suppression, imports] = await Promise.all([
    db
      .selectFrom('email_recipients as r')
      .innerJoin('transactional_emails as e', 'e.id', 'r.email_id')
      .select(['e.id', 'e.subject', 'e.created_at', 'r.status'])
      .where('r.email', '=', contact.email)
      .orderBy('e.created_at', 'desc')
      .limit(TIMELINE_LIMIT)
      .execute(),
    db
      .selectFrom('automation_runs as r')
      .innerJoin('automations as a', 'a.id', 'r.automation_id')
      .select(['r.id', 'r.automation_id', 'a.name', 'r.status', 'r.created_at'])
      .where('r.contact_id', '=', contact.id)
      .orderBy('r.created_at', 'desc')
      .limit(TIMELINE_LIMIT)
      .execute(),
    db
      .selectFrom('contact_events')
      .select(['name', 'created_at'])
      .where('contact_id', '=', contact.id)
      .orderBy('created_at', 'desc')
      .limit(TIMELINE_LIMIT)
      .execute(),
    db.selectFrom('suppressions').select(['reason', 'created_at']).where('email', '=', contact.email).executeTakeFirst(),
    db
      .selectFrom('contact_import_members as m')
      .innerJoin('contact_imports as i', 'i.id', 'm.import_id')
      .select(['m.import_id', 'm.outcome', 'm.created_at', 'i.filename'])
      .where('m.contact_id', '=', contact.id)
      .orderBy('m.created_at', 'desc')
      .limit(TIMELINE_LIMIT)
      .execute(),
  ]);
  const emailEvents =
    emails.length === 0
      ? []
      : await db
          .selectFrom('email_events')
          .select(['email_id', 'type', 'occurred_at'])
          .where(
            'email_id',
            'in',
            emails.map((e) => e.id),
          )
          .where('recipient', '=', contact.email)
          .orderBy('occurred_at', 'desc')
          .limit(TIMELINE_LIMIT * 4)
          .execute();
  const subjects = new Map(emails.map((e) => [e.id, e.subject]));
  const entries: TimelineEntry[] = [
    ...emails.map((e) => ({
      at: dateOf(e.created_at),
      kind: 'email' as const,
      label: e.status,
      title: e.subject,
      href: `/dashboard/emails/${e.id}`,
    })),
    ...emailEvents.map((e) => ({
      at: dateOf(e.occurred_at),
      kind: 'email_event' as const,
      label: e.type,
      title: subjects.get(e.email_id ?? '') ?? '',
      href: e.email_id ? `/dashboard/emails/${e.email_id}` : null,
    })),
    ...runs.map((r) => ({
      at: dateOf(r.created_at),
      kind: 'automation_run' as const,
      label: r.status,
      title: r.name,
      href: `/dashboard/automations/${r.automation_id}/runs/${r.id}`,
    })),
    ...events.map((e) => ({ at: dateOf(e.created_at), kind: 'event' as const, label: 'event', title: e.name, href: null })),
    ...imports.map((i) => ({
      at: dateOf(i.created_at),
      kind: 'import' as const,
      label: i.outcome,
      title: i.filename ?? 'CSV import',
      href: `/dashboard/contacts/imports/${i.import_id}`,
    })),
    ...(suppression
      ? [{ at: dateOf(suppression.created_at), kind: 'suppression' as const, label: suppression.reason, title: contact.email, href: null }]
      : []),
  ];
  return entries.sort((a, b) => b.at.getTime() - a.at.getTime());
}

/** The segments the contact is in now (segments.fns.ts has the rules), by name. */
export async function findContactSegments(
  em: EntityManager,
  orgId: string,
  contact: { id: string; tags: readonly string[] },
): Promise<{ id: string; name: string; type: string }[]> {
  return workspaceDb(em, orgId)
    .selectFrom('segments as s')
    .select(['s.id', 's.name', 's.type'])
    .where((eb) =>
      eb.or([
        eb('s.type', '=', 'all'),
        eb.and([eb('s.type', '=', 'tag'), eb('s.tags', '&&', eb.val([...contact.tags]))]),
        eb.and([
          eb('s.type', '=', 'static'),
          eb.exists(
            eb
              .selectFrom('segment_members as m')
              .select('m.contact_id')
              .whereRef('m.segment_id', '=', 's.id')
              .where('m.contact_id', '=', contact.id),
          ),
        ]),
      ]),
    )
    .orderBy('s.name')
    .limit(200)
    .execute();
}
