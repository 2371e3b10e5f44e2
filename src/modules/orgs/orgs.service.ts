import type { MikroORM } from '@mikro-orm/postgresql';
import { Organization, User } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';

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
        const org = em.create(Organization, {
          name: input.name,
          slug,
          creditBalance: input.credits ?? 0,
          overageEnabled: input.overage ?? false,
        });
        const owner = em.create(User, {
          orgId: org.id,
          email: input.ownerEmail ?? `owner@${slug}.herald.invalid`,
          name: `${input.name} owner`,
        });
        return { org, owner };
      });
    },

    async listOrganizations() {
      return orm.em.fork().find(Organization, {}, { orderBy: { id: 'asc' } });
    },

    async getOrganization(id: string) {
      const org = await orm.em.fork().findOne(Organization, { id });
      if (!org) throw new AppError('not_found', `workspace ${id} does not exist`);
      return org;
    },

    async findBySlug(slug: string) {
      return orm.em.fork().findOne(Organization, { slug });
    },

    /** Sets the transactional credit balance (and optionally the overage flag). */
    async setCredits(orgId: string, amount: number, overage?: boolean) {
      if (!Number.isInteger(amount) || amount < 0) {
        throw new AppError('invalid_request', 'amount must be a non-negative integer');
      }
      const em = orm.em.fork();
      const org = await em.findOne(Organization, { id: orgId });
      if (!org) throw new AppError('not_found', `workspace ${orgId} does not exist`);
      org.creditBalance = amount;
      if (overage !== undefined) org.overageEnabled = overage;
      await em.flush();
      return org;
    },
  };
}

export type OrgsService = ReturnType<typeof createOrgsService>;
