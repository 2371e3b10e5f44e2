import { LockMode, type EntityManager, type MikroORM } from '@mikro-orm/postgresql';
import { Domain, Organization, SenderIdentity, type DOMAIN_SOURCES } from '../../../db/entities/index.ts';
import { ALL_TENANTS, scopeToOrg } from '../../../db/orm.ts';
import { encryptSecret } from '../../crypto/secret-box.ts';
import { AppError } from '../../errors.ts';
import { startingWarmup } from '../warmup/warmup.fns.ts';
import { generateDkimKeyPair, normalizeDomainName } from './dkim.fns.ts';

export interface AddDomainInput {
  orgId: string;
  domain: string;
  verified?: boolean;
  isDefault?: boolean;
  dailyCap?: number;
  source?: (typeof DOMAIN_SOURCES)[number];
  /** Automatic warm-up: the schedule of a new domain (the default, except for the dev stack's domain), of one with a sending history, or none. */
  warmup?: 'new' | 'existing' | 'off';
}

export interface AddSenderInput {
  domainId: string;
  email: string;
  name: string;
  isDefault?: boolean;
}

export interface DomainWithSenders {
  domain: Domain;
  senders: SenderIdentity[];
}

/** Domains one workspace may hold: each add generates an RSA key, and a workspace needs few. */
export const MAX_DOMAINS_PER_WORKSPACE = 50;

/** A sender identity's display name, at most (the From header's phrase). */
export const SENDER_NAME_MAX = 200;

/**
 * Domain and sender administration for operators (`herald admin domain|sender`) and the
 * dashboard, and the workspace-scoped read behind GET /domains.
 */
export function createDomainsService(deps: { orm: MikroORM; encryptionKey: Buffer | undefined }) {
  const { orm } = deps;
  /** Adds a sender identity on a domain; the address must belong to that domain. */
  async function addSender(input: AddSenderInput) {
    const email = input.email.trim();
    const at = email.lastIndexOf('@');
    if (at < 1 || !input.name.trim()) {
      throw new AppError('invalid_request', 'sender needs an email address and a name');
    }
    return orm.em.fork().transactional(async (em) => {
      const domain = await em.findOne(Domain, { id: input.domainId }, ALL_TENANTS);
      if (!domain) throw new AppError('not_found', `domain ${input.domainId} does not exist`);
      const normalized = `${email.slice(0, at)}@${email.slice(at + 1).toLowerCase()}`;
      if (normalized.slice(at + 1) !== domain.domain) {
        throw new AppError('invalid_request', `${email} is not an address on ${domain.domain}`);
      }
      const taken = await em.count(SenderIdentity, { orgId: domain.orgId, email: normalized }, ALL_TENANTS);
      if (taken > 0) throw new AppError('conflict', `sender ${normalized} already exists`);
      const siblings = await em.count(SenderIdentity, { domainId: domain.id }, ALL_TENANTS);
      const isDefault = input.isDefault ?? siblings === 0;
      if (isDefault) {
        await em.nativeUpdate(SenderIdentity, { domainId: domain.id }, { isDefault: false }, ALL_TENANTS);
      }
      return em.create(SenderIdentity, {
        orgId: domain.orgId,
        domainId: domain.id,
        email: normalized,
        name: input.name.trim(),
        isDefault,
      });
    });
  }

  return {
    /**
     * Adds a domain with a fresh DKIM key pair (private key sealed with
     * HERALD_ENCRYPTION_KEY). The first domain of a workspace becomes its default. 409 only
     * when this workspace already has the name: whether another workspace holds it is never
     * told (it stays pending here until its DNS proves it and the other lets go; see
     * domain-verification.service.ts). At most MAX_DOMAINS_PER_WORKSPACE per workspace,
     * checked before the key is generated.
     */
    async addDomain(input: AddDomainInput) {
      const name = normalizeDomainName(input.domain);
      if (!name) throw new AppError('invalid_request', `"${input.domain}" is not a valid domain name`);
      if (input.dailyCap !== undefined && (!Number.isInteger(input.dailyCap) || input.dailyCap < 1)) {
        throw new AppError('invalid_request', 'daily cap must be a positive integer');
      }
      if (!deps.encryptionKey) {
        throw new AppError('service_unavailable', 'HERALD_ENCRYPTION_KEY is not set: DKIM private keys cannot be stored');
      }
      const admissible = async (em: EntityManager): Promise<number> => {
        const org = await em.findOne(Organization, { id: input.orgId });
        if (!org) throw new AppError('not_found', `workspace ${input.orgId} does not exist`);
        if ((await em.count(Domain, { orgId: org.id, domain: name }, ALL_TENANTS)) > 0) {
          throw new AppError('conflict', `domain ${name} is already in this workspace`);
        }
        const existing = await em.count(Domain, { orgId: org.id }, ALL_TENANTS);
        if (existing >= MAX_DOMAINS_PER_WORKSPACE) {
          throw new AppError('invalid_request', `a workspace holds at most ${MAX_DOMAINS_PER_WORKSPACE} domains; remove one first`);
        }
        return existing;
      };
      await admissible(orm.em.fork());
      const dkim = await generateDkimKeyPair();
      const sealed = encryptSecret(deps.encryptionKey, dkim.privateKeyPem);
      return orm.em.fork().transactional(async (em) => {
        // The workspace's domains are counted again under a lock on the workspace, so two adds at once cannot pass the limit together.
        const org = await em.findOne(Organization, { id: input.orgId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        const existing = await admissible(em);
        const isDefault = input.isDefault ?? existing === 0;
        if (isDefault) {
          await em.nativeUpdate(Domain, { orgId: input.orgId }, { isDefault: false }, ALL_TENANTS);
        }
        const verified = input.verified ?? false;
        if (verified && (await em.count(Domain, { domain: name, status: { $ne: 'pending' } }, ALL_TENANTS)) > 0) {
          // Operators only (the dashboard never adds a domain verified): they may know.
          throw new AppError('conflict', `domain ${name} is verified by another workspace`);
        }
        return em.create(Domain, {
          orgId: input.orgId,
          domain: name,
          status: verified ? 'verified' : 'pending',
          verifiedAt: verified ? new Date() : null,
          isDefault,
          source: input.source ?? 'operator',
          dkimPublicKey: dkim.publicKeyPem,
          dkimPrivateKeyEncrypted: sealed,
          dailyCap: input.dailyCap ?? null,
          ...startingWarmup(input.warmup ?? (input.source === 'dev' ? 'off' : 'new'), org?.warmupPlan ?? null, new Date()),
        });
      });
    },

    /**
     * Every domain of one workspace with its sender identities: the default domain first, then
     * by name; senders default first, then by address. Not paginated (a workspace has few).
     */
    async listWorkspaceDomains(orgId: string): Promise<DomainWithSenders[]> {
      const em = scopeToOrg(orm.em, orgId);
      const domains = await em.find(Domain, {}, { orderBy: { isDefault: 'desc', domain: 'asc' } });
      if (domains.length === 0) return [];
      const senders = await em.find(
        SenderIdentity,
        { domainId: { $in: domains.map((d) => d.id) } },
        { orderBy: { isDefault: 'desc', email: 'asc' } },
      );
      return domains.map((domain) => ({ domain, senders: senders.filter((s) => s.domainId === domain.id) }));
    },

    async listDomains(orgId?: string) {
      return orm.em.fork().find(Domain, orgId ? { orgId } : {}, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
    },

    addSender,

    /** Adds a sender identity on one of the workspace's domains (404 for another workspace's domain). */
    async addWorkspaceSender(orgId: string, input: AddSenderInput) {
      const domain = await scopeToOrg(orm.em, orgId).findOne(Domain, { id: input.domainId });
      if (!domain) throw new AppError('not_found', `domain ${input.domainId} does not exist`);
      if ([...input.name.trim()].length > SENDER_NAME_MAX || input.email.trim().length > 320) {
        throw new AppError('invalid_request', `a sender's name is at most ${SENDER_NAME_MAX} characters and its address 320`);
      }
      return addSender(input);
    },

    /**
     * Removes a sender identity of the workspace (404 for another workspace's). When it was its
     * domain's default, the next sender by address becomes the default.
     */
    async removeSender(orgId: string, senderId: string): Promise<SenderIdentity> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const sender = await em.findOne(SenderIdentity, { id: senderId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!sender) throw new AppError('not_found', `sender ${senderId} does not exist`);
        em.remove(sender);
        await em.flush();
        if (sender.isDefault) {
          const next = await em.findOne(SenderIdentity, { domainId: sender.domainId }, { orderBy: { email: 'asc' } });
          if (next) next.isDefault = true;
          await em.flush();
        }
        return sender;
      });
    },

    async listSenders(domainId: string) {
      return orm.em.fork().find(SenderIdentity, { domainId }, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
    },
  };
}

export type DomainsService = ReturnType<typeof createDomainsService>;
