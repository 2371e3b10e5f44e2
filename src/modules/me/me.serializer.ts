import type { KeyContext } from '../auth/key-context.ts';
import { SCOPE_CATALOG } from '../auth/scopes.ts';

/** The spec's Key context (data of GET /me), snake_case. */
export function serializeKeyContext(context: KeyContext) {
  return {
    org_id: context.orgId,
    org_slug: context.orgSlug,
    org_name: context.orgName,
    actor_user_id: context.actorUserId,
    key_id: context.keyId,
    auth_method: context.authMethod,
    scopes: context.scopes,
    enabled_scope_catalog: SCOPE_CATALOG.map((scope) => ({
      id: scope.id,
      domain: scope.domain,
      access: scope.access,
      launch: scope.launch,
      description: scope.description,
    })),
    rate_limit_profile: context.rateLimit,
  };
}
