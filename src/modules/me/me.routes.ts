import * as v from 'valibot';
import { defineRoute } from '../../http/route.ts';
import { serializeKeyContext } from './me.serializer.ts';

const ScopeEntry = v.object({
  id: v.string(),
  domain: v.string(),
  access: v.string(),
  launch: v.string(),
  description: v.string(),
});

export const KeyContextResponse = v.object({
  org_id: v.string(),
  org_slug: v.nullable(v.string()),
  org_name: v.nullable(v.string()),
  actor_user_id: v.string(),
  key_id: v.nullable(v.string()),
  auth_method: v.string(),
  scopes: v.array(v.string()),
  enabled_scope_catalog: v.array(ScopeEntry),
  rate_limit_profile: v.object({
    requests_per_minute: v.number(),
    burst: v.number(),
    source: v.picklist(['key', 'workspace', 'default']),
  }),
});

/** GET /me: the identity and limits of the calling key. */
export function createMeRoutes() {
  return [
    defineRoute({
      operationId: 'getMe',
      method: 'GET',
      path: '/me',
      summary: 'Inspect the calling key: workspace, scopes, rate-limit profile',
      tag: 'Account',
      scope: 'me:read',
      response: { status: 200, description: 'The key context', schema: KeyContextResponse },
      handle: ({ caller }) => Promise.resolve({ status: 200, data: serializeKeyContext(caller) }),
    }),
  ];
}
