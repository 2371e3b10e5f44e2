import type { MikroORM } from '@mikro-orm/postgresql';
import { Contact, TransactionalEmail } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import type { Config } from '../../config.ts';
import { recordEmailEvent } from '../metrics/email-events.ts';
import { moveContact } from '../outbound/outcomes.ts';
import { suppressAddress } from '../sends/suppression.repo.ts';
import { createRecipientLinks } from './recipient-links.ts';

export type UnsubscribeResult =
  | { outcome: 'unsubscribed'; email: string; sender: string }
  | { outcome: 'confirm'; email: string; sender: string }
  | { outcome: 'invalid' | 'expired' | 'unavailable' };

/**
 * Unsubscribes through a broadcast message's signed link (one-click POST from the mailbox
 * provider, RFC 8058, or the page's button): the contact moves to unsubscribed
 * (contact.updated and contact.unsubscribed to webhooks), its address goes on the suppression
 * list for the message's stream (reason unsubscribe, naming the message), and the broadcast counts one `unsubscribed`
 * event the first time. Repeating it changes nothing. `preview` only reads (the page a GET shows:
 * link scanners fetch every link, so a GET never unsubscribes).
 */
export function createUnsubscribeService(deps: { orm: MikroORM; config: Pick<Config, 'encryptionKeys' | 'http'> }) {
  const links = deps.config.encryptionKeys.length > 0 ? createRecipientLinks(deps.config.encryptionKeys, deps.config.http.publicUrl) : null;

  async function messageOf(token: string) {
    if (!links) return { outcome: 'unavailable' as const };
    const checked = links.check(token);
    if (!checked.ok) return { outcome: checked.reason };
    const email = await deps.orm.em.fork().findOne(TransactionalEmail, { id: checked.claim.emailId }, ALL_TENANTS);
    // A broadcast's or an automation's message: both go to a contact, whose unsubscribe it is.
    if (!(email?.broadcastId || email?.automationRunId) || !email.contactId) return { outcome: 'invalid' as const };
    return { outcome: 'ok' as const, email };
  }

  return {
    async preview(token: string): Promise<UnsubscribeResult> {
      const found = await messageOf(token);
      if (found.outcome !== 'ok') return found;
      const contact = await scopeToOrg(deps.orm.em.fork(), found.email.orgId).findOne(Contact, { id: found.email.contactId! });
      return { outcome: 'confirm', email: contact?.email ?? 'this address', sender: found.email.fromName || found.email.fromEmail };
    },

    async unsubscribe(token: string): Promise<UnsubscribeResult> {
      const found = await messageOf(token);
      if (found.outcome !== 'ok') return found;
      const { email } = found;
      const address = await scopeToOrg(deps.orm.em.fork(), email.orgId).transactional(async (tx) => {
        const contact = await tx.findOne(Contact, { id: email.contactId! });
        if (!contact) return null;
        if (contact.status === 'active') await moveContact(tx, email.orgId, contact.email, 'unsubscribed', 'contact.unsubscribed');
        const added = await suppressAddress(tx, email.orgId, contact.email, 'unsubscribe', {
          emailId: email.id,
          // The message's stream only: an unsubscribe from broadcast mail never blocks transactional mail.
          stream: email.stream,
          detail: email.broadcastId ? `broadcast ${email.broadcastId}` : `automation run ${email.automationRunId}`,
        });
        if (added) {
          await recordEmailEvent(tx, {
            orgId: email.orgId,
            type: 'unsubscribed',
            recipient: contact.email,
            domain: email.domain,
            emailId: email.id,
            broadcastId: email.broadcastId,
          });
        }
        return contact.email;
      });
      return { outcome: 'unsubscribed', email: address ?? 'this address', sender: email.fromName || email.fromEmail };
    },
  };
}

export type UnsubscribeService = ReturnType<typeof createUnsubscribeService>;
