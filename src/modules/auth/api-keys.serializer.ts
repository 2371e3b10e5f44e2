import type { ApiKey } from '../../../db/entities/index.ts';

/** A key as the API shows it: never the secret or its hash; the prefix to recognise it. */
export function serializeApiKey(key: ApiKey) {
  return {
    _id: key.id,
    name: key.name,
    prefix: key.prefix,
    mode: key.mode,
    scopes: key.scopes,
    created_at: key.createdAt.toISOString(),
    last_used_at: key.lastUsedAt?.toISOString() ?? null,
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
    parent_key_id: key.parentKeyId ?? null,
  };
}
