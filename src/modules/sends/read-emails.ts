import type { EntityManager } from '@mikro-orm/postgresql';
import { EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import type { KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { findEmailEvents, findEmailPage, type EmailEventView } from './email-log.repo.ts';
import type { ListEmailsFilters } from './sends.schemas.ts';

/** One email with its recipients (the rows: the dashboard shows more of them than the API's record), or 404. */
export async function getEmail(
  em: EntityManager,
  orgId: string,
  id: string,
): Promise<{ email: TransactionalEmail; recipients: EmailRecipient[] }> {
  const scoped = scopeToOrg(em, orgId);
  const email = await scoped.findOne(TransactionalEmail, { id });
  if (!email) throw new AppError('not_found', `Email ${id} was not found.`);
  const recipients = await scoped.find(EmailRecipient, { emailId: id }, { orderBy: { id: 'asc' } });
  return { email, recipients };
}

/** One email with its recipients and their events (the email's timeline), or 404. */
export async function getEmailWithEvents(
  em: EntityManager,
  orgId: string,
  id: string,
): Promise<{ email: TransactionalEmail; recipients: EmailRecipient[]; events: EmailEventView[] }> {
  const found = await getEmail(em, orgId, id);
  return { ...found, events: await findEmailEvents(scopeToOrg(em, orgId), orgId, id) };
}

/** The email log: a keyset page of the workspace's emails, newest first, filtered. */
export function listEmails(
  em: EntityManager,
  orgId: string,
  page: { limit: number; after?: KeysetPosition | undefined },
  filters: Omit<ListEmailsFilters, 'limit' | 'cursor'>,
) {
  return findEmailPage(scopeToOrg(em, orgId), page, filters);
}
