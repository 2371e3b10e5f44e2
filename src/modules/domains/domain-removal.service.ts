import { LockMode, type EntityManager, type MikroORM } from '@mikro-orm/postgresql';
import { Broadcast, Domain, SenderIdentity, TransactionalEmail } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';

/** What removing a domain would touch: mail still on its way from it, broadcasts sending on it, its senders. */
export interface DomainUse {
  domain: Domain;
  /** Transactional emails scheduled, queued or sending from it. */
  waitingEmails: number;
  /** Broadcasts scheduled or sending on it. */
  activeBroadcasts: number;
  senders: number;
}

const notFound = (id: string) => new AppError('not_found', `Domain ${id} does not exist.`);

async function useOf(em: EntityManager, domain: Domain): Promise<DomainUse> {
  const [waitingEmails, activeBroadcasts, senders] = await Promise.all([
    em.count(TransactionalEmail, { domainId: domain.id, status: { $in: ['scheduled', 'queued', 'sending'] } }),
    em.count(Broadcast, { domainId: domain.id, status: { $in: ['scheduled', 'sending'] } }),
    em.count(SenderIdentity, { domainId: domain.id }),
  ]);
  return { domain, waitingEmails, activeBroadcasts, senders };
}

/**
 * Removing a sending domain from a workspace (the dashboard's domain page). Refused with 409
 * conflict while mail is still on its way from it (`details.reason` DOMAIN_IN_USE): cancel it
 * or let it finish first. Its sender identities and sealed DKIM key go with it; mail it sent
 * stays in the email log. The default domain's role passes to the next domain by name.
 */
export function createDomainRemoval(deps: { orm: MikroORM }) {
  const { orm } = deps;
  return {
    /** The domain of the workspace with what removing it would touch; 404 for another workspace's. */
    async domainUse(orgId: string, id: string): Promise<DomainUse> {
      const em = scopeToOrg(orm.em, orgId);
      const domain = await em.findOne(Domain, { id });
      if (!domain) throw notFound(id);
      return useOf(em, domain);
    },

    /** Deletes the domain and its sender identities; returns what was deleted. */
    async deleteDomain(orgId: string, id: string): Promise<Domain> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const domain = await em.findOne(Domain, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!domain) throw notFound(id);
        const use = await useOf(em, domain);
        if (use.waitingEmails > 0 || use.activeBroadcasts > 0) {
          throw new AppError(
            'conflict',
            `Domain ${domain.domain} still has mail on its way; cancel it or let it finish, then delete the domain.`,
            {
              reason: 'DOMAIN_IN_USE',
              waiting_emails: use.waitingEmails,
              active_broadcasts: use.activeBroadcasts,
            },
          );
        }
        await em.nativeDelete(SenderIdentity, { domainId: domain.id });
        em.remove(domain);
        await em.flush();
        if (domain.isDefault) {
          const next = await em.findOne(Domain, {}, { orderBy: { domain: 'asc' } });
          if (next) next.isDefault = true;
          await em.flush();
        }
        return domain;
      });
    },
  };
}

export type DomainRemoval = ReturnType<typeof createDomainRemoval>;
