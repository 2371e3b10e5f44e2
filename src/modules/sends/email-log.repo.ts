import { raw, type EntityManager, type FilterQuery } from '@mikro-orm/postgresql';
import { EmailEvent, EmailRecipient, TransactionalEmail, type EmailEventType } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import type { ListEmailsFilters } from './sends.schemas.ts';

/**
 * The email log (GET /outbox/emails): a workspace's transactional emails (not broadcast messages), newest first on
 * (created_at, id), each with its recipients, filtered by status, recipient, sender address or
 * domain, tag, stream, template and creation time. `em` is scoped to the workspace.
 */
export async function findEmailPage(
  em: EntityManager,
  page: { limit: number; after?: KeysetPosition | undefined },
  filters: Omit<ListEmailsFilters, 'limit' | 'cursor'>,
): Promise<KeysetPage<TransactionalEmail> & { recipients: Map<string, EmailRecipient[]> }> {
  // A broadcast's messages are read through the broadcast (and the log's index leaves them out).
  const where: FilterQuery<TransactionalEmail>[] = [{ broadcastId: null }];
  if (filters.status) where.push({ status: filters.status });
  if (filters.from) where.push(filters.from.includes('@') ? { fromEmail: filters.from } : { domain: filters.from });
  // `cardinality(tags) <> 0` (implied by the tag) lets PostgreSQL use the tag index, which holds tagged emails
  // only; `<>` because without statistics on the expression PostgreSQL takes it as ~always true (`>` as a third).
  if (filters.tag) where.push({ tags: { $contains: [filters.tag] } }, { [raw('cardinality(tags)')]: { $ne: 0 } });
  if (filters.stream) where.push({ stream: filters.stream });
  if (filters.template_id) where.push({ templateId: filters.template_id });
  if (filters.created_after) where.push({ createdAt: { $gte: new Date(filters.created_after) } });
  if (filters.created_before) where.push({ createdAt: { $lt: new Date(filters.created_before) } });
  if (filters.to) {
    const sentTo = em.createQueryBuilder(EmailRecipient, 'r').select('r.emailId').where({ email: filters.to });
    where.push({ id: { $in: sentTo } });
  }
  const found = await findKeysetPage(em, TransactionalEmail, { $and: where }, page);
  const ids = found.items.map((email) => email.id);
  const rows = ids.length > 0 ? await em.find(EmailRecipient, { emailId: { $in: ids } }, { orderBy: { id: 'asc' } }) : [];
  const recipients = new Map<string, EmailRecipient[]>();
  for (const row of rows) recipients.set(row.emailId, [...(recipients.get(row.emailId) ?? []), row]);
  return { ...found, recipients };
}

export interface EmailEventView {
  type: EmailEventType;
  recipient: string;
  occurredAt: Date;
}

/** What happened to one email's recipients (sent, delivered, deferred, bounced, …), oldest first. */
export async function findEmailEvents(em: EntityManager, orgId: string, emailId: string): Promise<EmailEventView[]> {
  const events = await em.find(EmailEvent, { orgId, emailId }, { orderBy: { occurredAt: 'asc', id: 'asc' }, filters: false });
  return events.map((event) => ({ type: event.type, recipient: event.recipient, occurredAt: event.occurredAt }));
}
