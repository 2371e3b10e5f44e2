import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { EmailRecipient, TransactionalEmail } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import type { BlobStore } from '../../blob/blob-store.ts';
import { AppError } from '../../errors.ts';
import { releaseEmailQuota } from './quota.repo.ts';
import { getEmail } from './read-emails.ts';

/**
 * Cancels a scheduled (or not yet started) send: 409 once sending started or settled. The
 * row moves to cancelled (off its domain's queue) with its credits and warm-up count given
 * back, in one transaction; a drain that already claimed it finds it cancelled and sends nothing.
 * The email's own inline attachment bytes are deleted afterwards.
 */
export async function cancelEmail(options: { em: EntityManager; blobs: BlobStore | null; orgId: string; id: string }) {
  const { em, orgId, id } = options;
  await scopeToOrg(em, orgId).transactional(async (tx) => {
    const email = await tx.findOne(TransactionalEmail, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!email) throw new AppError('not_found', `Email ${id} was not found.`);
    if (email.status !== 'scheduled' && email.status !== 'queued') {
      throw new AppError('conflict', `Email ${id} is ${email.status}: only a send that has not started can be cancelled.`, {
        reason: 'EMAIL_NOT_CANCELLABLE',
        status: email.status,
      });
    }
    email.status = 'cancelled';
    email.nextAttemptAt = null;
    email.cancelledAt = new Date();
    email.settledAt = email.cancelledAt;
    await releaseEmailQuota(tx, email);
    await tx.nativeUpdate(EmailRecipient, { emailId: id }, { status: 'cancelled' });
  });
  const email = await getEmail(em, orgId, id);
  for (const record of email.email.attachments) {
    if (record.blob_key && !record.attachment_id) await options.blobs?.delete(record.blob_key);
  }
  return email;
}
