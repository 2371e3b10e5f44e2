import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKey, Organization, User, type ApiKeyMode } from '../../../db/entities/index.ts';
import { ALL_TENANTS } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { generateApiKey } from './api-key.fns.ts';
import { revokeKeyAndDescendants } from './api-keys.repo.ts';
import { resolveGrantableScopes } from './scopes.ts';

export interface CreateApiKeyInput {
  orgId: string;
  scopes: string[];
  mode?: ApiKeyMode;
  name?: string;
  rateLimitPerMinute?: number;
  burst?: number;
  expiresAt?: Date | null;
  /** The key that creates this one through the API (revoking it revokes this one). */
  parentKeyId?: string | null;
  /** The person the key acts for (a dashboard user, or the caller's key's); the workspace's first user when absent. */
  actorUserId?: string;
}

/** API key administration: operators (`herald admin key`) and workspaces (api-keys.routes.ts). */
export function createApiKeysService({ orm }: { orm: MikroORM }) {
  return {
    /** Creates a key; the returned `key` is the only time the secret exists in clear. */
    async createApiKey(input: CreateApiKeyInput) {
      const scopes = resolveGrantableScopes(input.scopes);
      if (!scopes.ok) {
        const problems = [
          ...scopes.unknown.map((s) => `unknown scope "${s}"`),
          ...scopes.gated.map((s) => `scope "${s}" is gated and cannot be granted to public_api keys`),
        ];
        throw new AppError('invalid_request', problems.join('; ') || 'at least one scope is required');
      }
      for (const [name, value] of [
        ['rate limit', input.rateLimitPerMinute],
        ['burst', input.burst],
      ] as const) {
        if (value !== undefined && (!Number.isInteger(value) || value < 1)) {
          throw new AppError('invalid_request', `${name} must be a positive integer`);
        }
      }
      const em = orm.em.fork();
      const org = await em.findOne(Organization, { id: input.orgId });
      if (!org) throw new AppError('not_found', `workspace ${input.orgId} does not exist`);
      const owner = input.actorUserId
        ? await em.findOne(User, { id: input.actorUserId, orgId: org.id }, ALL_TENANTS)
        : await em.findOne(User, { orgId: org.id }, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
      if (!owner) throw new AppError('not_found', `workspace ${input.orgId} has no user to act as`);
      const mode = input.mode ?? 'test';
      const generated = generateApiKey(mode);
      const apiKey = em.create(ApiKey, {
        orgId: org.id,
        userId: owner.id,
        name: input.name ?? `${mode} key`,
        prefix: generated.prefix,
        secretHash: generated.secretHash,
        mode,
        scopes: scopes.scopes,
        rateLimitPerMinute: input.rateLimitPerMinute ?? null,
        rateLimitBurst: input.burst ?? null,
        expiresAt: input.expiresAt ?? null,
        parentKeyId: input.parentKeyId ?? null,
      });
      await em.flush();
      return { apiKey, key: generated.key };
    },

    /** Revokes a key and every key made from it. */
    async revokeApiKey(id: string) {
      const em = orm.em.fork();
      const apiKey = await em.findOne(ApiKey, { id }, ALL_TENANTS);
      if (!apiKey) throw new AppError('not_found', `API key ${id} does not exist`);
      await revokeKeyAndDescendants(em, apiKey);
      return apiKey;
    },

    async listApiKeys(orgId?: string) {
      return orm.em.fork().find(ApiKey, orgId ? { orgId } : {}, { ...ALL_TENANTS, orderBy: { id: 'asc' } });
    },
  };
}

export type ApiKeysService = ReturnType<typeof createApiKeysService>;
