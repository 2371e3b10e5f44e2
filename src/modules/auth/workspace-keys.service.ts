import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKey, type ApiKeyMode } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { revokeKeyAndDescendants } from './api-keys.repo.ts';
import { createApiKeysService } from './api-keys.service.ts';
import type { KeyContext, RateLimitProfile } from './key-context.ts';
import { resolveGrantableScopes } from './scopes.ts';

/** The longest name a key may have (the API and the dashboard). */
export const KEY_NAME_MAX = 200;

/** How far ahead an API key may expire: three years. */
export const KEY_EXPIRY_MAX_MS = 3 * 365 * 86_400_000;
/** The earliest expiry: a minute from now (a key that expires at once is a mistake). */
export const KEY_EXPIRY_MIN_MS = 60_000;

export interface CreateWorkspaceKeyInput {
  name: string;
  scopes: string[];
  mode?: ApiKeyMode | undefined;
  expires_at?: string | undefined;
  /** At most the calling key's own profile; absent: the calling key's (see limitsFromParent). */
  rate_limit?: { requests_per_minute: number; burst?: number | undefined } | undefined;
}

/** What a key made by a key may have at most: the parent's expiry and rate limit. */
interface ParentBounds {
  id: string;
  expiresAt: Date | null;
  /** The parent's own key-level limit (null: it follows the workspace's), and the profile in force. */
  own: { perMinute: number | null; burst: number | null };
  profile: RateLimitProfile;
}

const field = (path: string, type: string, message: string) => ({ path, location: 'body', type, message });

/**
 * A workspace's own API keys (GET/POST /api-keys, DELETE /api-keys/{id}). A key creates keys
 * only with scopes it holds itself (gated scopes stay portal-only) and of its own mode or test
 * (a test key cannot mint a live one). Revocation and expiry reach every api replica within the
 * authenticator's cache time (5 s). A key made by a key (docs/api-keys.md) cannot outlive or
 * out-rate it either, and is revoked with it.
 */
export function createWorkspaceKeysService({ orm }: { orm: MikroORM }) {
  const keys = createApiKeysService({ orm });
  return {
    async listKeys(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), ApiKey, { audience: 'public_api' }, page);
    },

    /** The key and its secret, which is shown this once. */
    async createKey(caller: KeyContext, input: CreateWorkspaceKeyInput, now = new Date()) {
      const resolved = resolveGrantableScopes(input.scopes);
      if (!resolved.ok) {
        const unknown = [...resolved.unknown, ...resolved.gated];
        throw new AppError('invalid_request', `These scopes cannot be granted to an API key: ${unknown.join(', ') || '(none given)'}.`, {
          fields: [
            field('scopes', 'scope', unknown.length > 0 ? `unknown or gated: ${unknown.join(', ')}` : 'at least one scope is required'),
          ],
        });
      }
      const notHeld = resolved.scopes.filter((scope) => !caller.scopes.includes(scope));
      if (notHeld.length > 0) {
        throw new AppError('forbidden', `This key cannot grant scopes it does not hold: ${notHeld.join(', ')}.`, {
          reason: 'SCOPE_NOT_HELD',
          scopes: notHeld,
        });
      }
      const mode = input.mode ?? caller.keyMode;
      if (mode === 'live' && caller.keyMode !== 'live') {
        throw new AppError('forbidden', 'A test key cannot create a live key.', { reason: 'MODE_NOT_HELD' });
      }
      let expiresAt: Date | null = null;
      if (input.expires_at !== undefined) {
        expiresAt = new Date(input.expires_at);
        const ahead = expiresAt.getTime() - now.getTime();
        if (ahead < KEY_EXPIRY_MIN_MS || ahead > KEY_EXPIRY_MAX_MS) {
          throw new AppError('invalid_request', 'Invalid body.expires_at: must be between a minute and three years from now.', {
            fields: [field('expires_at', 'range', 'must be between a minute and three years from now')],
          });
        }
      }
      const parent = await parentBounds(orm, caller);
      const limits = parent
        ? limitsFromParent(parent, expiresAt, input.rate_limit)
        : { expiresAt, perMinute: input.rate_limit?.requests_per_minute, burst: input.rate_limit?.burst };
      return keys.createApiKey({
        orgId: caller.orgId,
        scopes: resolved.scopes,
        mode,
        name: input.name,
        expiresAt: limits.expiresAt,
        ...(limits.perMinute != null ? { rateLimitPerMinute: limits.perMinute } : {}),
        ...(limits.burst != null ? { burst: limits.burst } : {}),
        parentKeyId: parent?.id ?? null,
        actorUserId: caller.actorUserId,
      });
    },

    /** Revokes a key of the workspace and every key made from it (again: no change); 404 for another workspace's. */
    async revokeKey(orgId: string, id: string): Promise<ApiKey> {
      const em = scopeToOrg(orm.em, orgId);
      const key = await em.findOne(ApiKey, { id, audience: 'public_api' });
      if (!key) throw new AppError('not_found', `API key ${id} does not exist.`);
      await revokeKeyAndDescendants(em, key);
      return key;
    },
  };
}

/**
 * The calling key's bounds, when the caller is a key (a person in the dashboard is not), read
 * afresh: a key revoked a moment ago (still in the authenticator's 5 s cache) makes no child
 * that its revocation would have missed.
 */
async function parentBounds(orm: MikroORM, caller: KeyContext): Promise<ParentBounds | null> {
  if (caller.authMethod !== 'api_key' || !caller.keyId) return null;
  const key = await scopeToOrg(orm.em, caller.orgId).findOne(ApiKey, { id: caller.keyId });
  if (!key || key.revokedAt) throw new AppError('invalid_api_key', 'This API key has been revoked.');
  return {
    id: key.id,
    expiresAt: key.expiresAt ?? null,
    own: { perMinute: key.rateLimitPerMinute ?? null, burst: key.rateLimitBurst ?? null },
    profile: caller.rateLimit,
  };
}

/**
 * A child key's expiry and rate limit under its parent: an expiry no later than the parent's
 * (the parent's when none is asked and the parent has one), a rate limit no higher than the
 * parent's profile (the parent's own key-level limit when none is asked, so a parent held below
 * its workspace's limit cannot mint a faster key). 403 EXPIRY_NOT_HELD / RATE_LIMIT_NOT_HELD.
 */
function limitsFromParent(parent: ParentBounds, expiresAt: Date | null, rate: CreateWorkspaceKeyInput['rate_limit']) {
  if (parent.expiresAt && (!expiresAt || expiresAt > parent.expiresAt)) {
    if (expiresAt) {
      throw new AppError(
        'forbidden',
        `A key cannot outlive the key that creates it: expires_at must be at most ${parent.expiresAt.toISOString()}.`,
        {
          reason: 'EXPIRY_NOT_HELD',
          parent_expires_at: parent.expiresAt.toISOString(),
        },
      );
    }
    expiresAt = parent.expiresAt;
  }
  if (!rate) return { expiresAt, perMinute: parent.own.perMinute, burst: parent.own.burst };
  const burst = rate.burst ?? parent.profile.burst;
  if (rate.requests_per_minute > parent.profile.requests_per_minute || burst > parent.profile.burst) {
    const { requests_per_minute, burst: parentBurst } = parent.profile;
    throw new AppError(
      'forbidden',
      `A key cannot have a higher rate limit than the key that creates it (${requests_per_minute} requests a minute, burst ${parentBurst}).`,
      {
        reason: 'RATE_LIMIT_NOT_HELD',
        rate_limit: { requests_per_minute, burst: parentBurst },
      },
    );
  }
  return { expiresAt, perMinute: rate.requests_per_minute, burst };
}

export type WorkspaceKeysService = ReturnType<typeof createWorkspaceKeysService>;
