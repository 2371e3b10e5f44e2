import type { FilterQuery, MikroORM } from '@mikro-orm/postgresql';
import { Contact, Suppression, SuppressionChange } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import type { ContactsService } from '../contacts/contacts.service.ts';
import { suppressAddress } from '../sends/suppression.repo.ts';
import { apiReason, storedReason } from './suppressions.serializer.ts';
import type { AddSuppressionInput, SuppressionApiReason } from './suppressions.schemas.ts';
import { deleteSuppression, suppressionScopes } from './suppressions.repo.ts';
import { assertStreamExists } from '../streams/streams.repo.ts';

/** A scope as the API names it (`all` or a stream) as stored ('' : every stream). */
const storedStream = (stream: string | null | undefined): string => (!stream || stream === 'all' ? '' : stream);

/** Contact statuses that also keep sends away from an address (the send's suppression check reads them). */
const BLOCKING_STATUSES = ['bounced', 'complained', 'suppressed'] as const;

/**
 * A workspace's suppression list: the addresses POST /outbox/emails and SMTP submission refuse
 * (403 RECIPIENT_SUPPRESSED). Bounces and complaints add to it as before; callers list it, add an
 * address by hand and lift one. Every change is written to the audit trail (suppression_changes)
 * in the statement that makes it, with the API key that asked.
 */
export function createSuppressionsService(deps: { orm: MikroORM; contacts: Pick<ContactsService, 'updateContact'> }) {
  const { orm } = deps;
  const page = (p: { limit: number; after?: KeysetPosition | undefined }) => p;

  return {
    async listSuppressions(
      orgId: string,
      request: { limit: number; after?: KeysetPosition | undefined },
      filters: { reason?: SuppressionApiReason | undefined; email?: string | undefined; stream?: string | undefined },
    ) {
      const where: FilterQuery<Suppression> = {
        ...(filters.reason ? { reason: storedReason(filters.reason) } : {}),
        ...(filters.email ? { email: filters.email } : {}),
        ...(filters.stream ? { stream: storedStream(filters.stream) } : {}),
      };
      return findKeysetPage(scopeToOrg(orm.em, orgId), Suppression, where, page(request));
    },

    /**
     * Adds an address by hand (reason `manual`), for every stream or for `input.stream` alone
     * (422 UNKNOWN_STREAM when the workspace has no such stream); 409 when it is already listed
     * for that scope, with the reason it is there.
     */
    async addSuppression(orgId: string, apiKeyId: string | null, input: AddSuppressionInput): Promise<Suppression> {
      const em = scopeToOrg(orm.em, orgId);
      const stream = storedStream(input.stream);
      if (stream) await assertStreamExists(em, stream, 'stream');
      const added = await suppressAddress(em, orgId, input.email, 'manual', { detail: input.detail ?? null, apiKeyId, stream });
      const entry = await em.findOneOrFail(Suppression, { email: input.email, stream }, { refresh: true });
      if (!added) {
        throw new AppError('conflict', `${input.email} is already on the suppression list (${apiReason(entry.reason)}).`, {
          reason: 'ALREADY_SUPPRESSED',
          suppression_reason: apiReason(entry.reason),
        });
      }
      return entry;
    },

    /**
     * Lifts a suppression: the entries of the address (only the one of scope `stream` when
     * given: `all` or a stream name) go, the trail records who lifted each, and when the entry
     * for every stream went, the workspace's contact with the address, when a bounce, complaint
     * or suppression status still blocks it, is moved back to active (its contact.updated event
     * follows), so the address can be sent to again. 404 when no such entry is listed.
     */
    async removeSuppression(
      orgId: string,
      apiKeyId: string | null,
      email: string,
      stream?: string,
    ): Promise<{ contactReactivated: boolean }> {
      const em = scopeToOrg(orm.em, orgId);
      const scopes = stream === undefined ? await suppressionScopes(em, orgId, email) : [storedStream(stream)];
      const removed: string[] = [];
      for (const scope of scopes) if (await deleteSuppression(em, orgId, email, scope, apiKeyId)) removed.push(scope);
      if (removed.length === 0) throw new AppError('not_found', `${email} is not on this workspace's suppression list.`);
      if (!removed.includes('')) return { contactReactivated: false };
      const contact = await em.findOne(Contact, { email, status: { $in: [...BLOCKING_STATUSES] } });
      if (!contact) return { contactReactivated: false };
      await deps.contacts.updateContact(orgId, contact.id, { status: 'active' });
      return { contactReactivated: true };
    },

    /** The audit trail, newest first. */
    async listChanges(orgId: string, request: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), SuppressionChange, {}, page(request));
    },
  };
}

export type SuppressionsService = ReturnType<typeof createSuppressionsService>;
