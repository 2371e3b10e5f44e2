import type { MikroORM } from '@mikro-orm/postgresql';
import { Organization, User } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { readCredits, readCreditsOf, setCreditBalance, type CreditTotals } from './credits.repo.ts';

export interface CreateOrganizationInput {
  name: string;
  slug?: string;
  credits?: number;
  overage?: boolean;
  ownerEmail?: string;
}

export function slugify(name: string): string {
  const slug = name
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 100);
  return slug || 'workspace';
}

/** A workspace's name and postal address, at most (their columns). */
export const WORKSPACE_NAME_MAX = 200;
export const POSTAL_ADDRESS_MAX = 500;

/** A postal address as stored: trimmed, null when empty; refused past POSTAL_ADDRESS_MAX. */
function postalAddressOf(address: string | null): string | null {
  const value = address?.trim() || null;
  if (value !== null && value.length > POSTAL_ADDRESS_MAX) {
    throw new AppError('invalid_request', `the postal address must be at most ${POSTAL_ADDRESS_MAX} characters`, {
      fields: [{ path: 'postal_address', location: 'body', type: 'length', message: `must be at most ${POSTAL_ADDRESS_MAX} characters` }],
    });
  }
  return value;
}

const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9-]{0,98}[a-z0-9])?$/;

/** Workspace administration for operators (`herald admin org|credits`). */
export function createOrgsService({ orm }: { orm: MikroORM }) {
  return {
    /** Creates a workspace and its owner user (the actor of its first keys). */
    async createOrganization(input: CreateOrganizationInput) {
      const slug = input.slug ?? slugify(input.name);
      if (!SLUG_PATTERN.test(slug)) {
        throw new AppError('invalid_request', `invalid slug "${slug}": use a-z, 0-9 and dashes`);
      }
      if (input.credits !== undefined && (!Number.isInteger(input.credits) || input.credits < 0)) {
        throw new AppError('invalid_request', 'credits must be a non-negative integer');
      }
      return orm.em.fork().transactional(async (em) => {
        const taken = await em.count(Organization, { slug });
        if (taken > 0) throw new AppError('conflict', `a workspace with slug "${slug}" exists`);
        const org = em.create(Organization, { name: input.name, slug, overageEnabled: input.overage ?? false });
        await setCreditBalance(em, org.id, input.credits ?? 0);
        const owner = em.create(User, {
          orgId: org.id,
          email: input.ownerEmail ?? `owner@${slug}.herald.invalid`,
          name: `${input.name} owner`,
          role: 'owner',
        });
        return { org, owner, credits: { balance: input.credits ?? 0, overageUsed: 0 } satisfies CreditTotals };
      });
    },

    /** Every workspace with its credits. */
    async listOrganizations(): Promise<Array<{ org: Organization; credits: CreditTotals }>> {
      const em = orm.em.fork();
      const orgs = await em.find(Organization, {}, { orderBy: { id: 'asc' } });
      const credits = await readCreditsOf(
        em,
        orgs.map((org) => org.id),
      );
      return orgs.map((org) => ({ org, credits: credits.get(org.id) ?? { balance: 0, overageUsed: 0 } }));
    },

    async getOrganization(id: string) {
      const org = await orm.em.fork().findOne(Organization, { id });
      if (!org) throw new AppError('not_found', `workspace ${id} does not exist`);
      return org;
    },

    async findBySlug(slug: string) {
      return orm.em.fork().findOne(Organization, { slug });
    },

    /** The workspace's credit balance and overage used. */
    async credits(orgId: string): Promise<CreditTotals> {
      return readCredits(orm.em.fork(), orgId);
    },

    /** Sets the transactional credit balance (and optionally the overage flag). */
    async setCredits(orgId: string, amount: number, overage?: boolean) {
      if (!Number.isInteger(amount) || amount < 0) {
        throw new AppError('invalid_request', 'amount must be a non-negative integer');
      }
      return orm.em.fork().transactional(async (em) => {
        const org = await em.findOne(Organization, { id: orgId });
        if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
        if (overage !== undefined) org.overageEnabled = overage;
        await setCreditBalance(em, orgId, amount);
        return { org, credits: await readCredits(em, orgId) };
      });
    },

    /**
     * Sets the postal address printed in the footer of every broadcast message of the workspace
     * (CAN-SPAM asks for one; mailbox providers expect it); null removes it. At most 500
     * characters, line breaks kept.
     */
    async setPostalAddress(orgId: string, address: string | null) {
      const value = postalAddressOf(address);
      return orm.em.fork().transactional(async (em) => {
        const org = await em.findOne(Organization, { id: orgId });
        if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
        org.postalAddress = value;
        return { org, credits: await readCredits(em, orgId) };
      });
    },

    /**
     * The workspace settings its owners edit in the dashboard: its name (1 to 200 characters)
     * and its postal address (as setPostalAddress; empty removes it).
     */
    async updateWorkspace(orgId: string, input: { name: string; postalAddress: string | null }) {
      const name = input.name.trim();
      if (name.length === 0 || name.length > WORKSPACE_NAME_MAX) {
        throw new AppError('invalid_request', `the workspace name must be 1 to ${WORKSPACE_NAME_MAX} characters`, {
          fields: [{ path: 'name', location: 'body', type: 'length', message: `must be 1 to ${WORKSPACE_NAME_MAX} characters` }],
        });
      }
      const address = postalAddressOf(input.postalAddress);
      return orm.em.fork().transactional(async (em) => {
        const org = await em.findOne(Organization, { id: orgId });
        if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
        org.name = name;
        org.postalAddress = address;
        return org;
      });
    },
  };
}

export type OrgsService = ReturnType<typeof createOrgsService>;
