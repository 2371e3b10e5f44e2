import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKey, type ApiKeyMode } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { AppError } from '../../errors.ts';
import { createApiKeysService } from './api-keys.service.ts';
import type { KeyContext } from './key-context.ts';
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
}

const field = (path: string, type: string, message: string) => ({ path, location: 'body', type, message });

/**
 * A workspace's own API keys (GET/POST /api-keys, DELETE /api-keys/{id}). A key creates keys
 * only with scopes it holds itself (gated scopes stay portal-only) and of its own mode or test
 * (a test key cannot mint a live one). Revocation and expiry reach every api replica within the
 * authenticator's cache time (5 s).
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
          fields: [field('scopes', 'scope', unknown.length > 0 ? `unknown or gated: ${unknown.join(', ')}` : 'at least one scope is required')],
        });
      }
      const notHeld = resolved.scopes.filter((scope) => !caller.scopes.includes(scope));
      if (notHeld.length > 0) {
        throw new AppError('forbidden', `This key cannot grant scopes it does not hold: ${notHeld.join(', ')}.`, { reason: 'SCOPE_NOT_HELD', scopes: notHeld });
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
      return keys.createApiKey({ orgId: caller.orgId, scopes: resolved.scopes, mode, name: input.name, expiresAt, actorUserId: caller.actorUserId });
    },

    /** Revokes a key of the workspace (again: no change); 404 for another workspace's. */
    async revokeKey(orgId: string, id: string): Promise<ApiKey> {
      const em = scopeToOrg(orm.em, orgId);
      const key = await em.findOne(ApiKey, { id, audience: 'public_api' });
      if (!key) throw new AppError('not_found', `API key ${id} does not exist.`);
      key.revokedAt ??= new Date();
      await em.flush();
      return key;
    },
  };
}

export type WorkspaceKeysService = ReturnType<typeof createWorkspaceKeysService>;
