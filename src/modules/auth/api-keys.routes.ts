/**
 * A workspace's API keys (Herald extension; scopes api_keys:read / api_keys:write): list
 * (metadata only), create (the secret shown once), revoke.
 */
import * as v from 'valibot';
import { API_KEY_MODES } from '../../../db/entities/index.ts';
import type { CursorCodec } from '../../http/cursor.ts';
import { listResult } from '../../http/paging.ts';
import { defineRoute } from '../../http/route.ts';
import type { StoredResponse } from '../idempotency/idempotency.types.ts';
import { IdParams, PageQuery, Timestamp } from '../../http/schemas.ts';
import { DateTime } from '../inbox/inbox.schemas.ts';
import { serializeApiKey } from './api-keys.serializer.ts';
import { KEY_NAME_MAX, type WorkspaceKeysService } from './workspace-keys.service.ts';

const ApiKeyResponse = v.object({
  _id: v.string(),
  name: v.string(),
  prefix: v.string(),
  mode: v.picklist(API_KEY_MODES),
  scopes: v.array(v.string()),
  created_at: Timestamp,
  last_used_at: v.nullable(Timestamp),
  expires_at: v.nullable(Timestamp),
  revoked_at: v.nullable(Timestamp),
  parent_key_id: v.pipe(
    v.nullable(v.string()),
    v.description(
      'The key that created this one through the API (revoked with it); null for keys made by an operator or in the dashboard.',
    ),
  ),
});

const CreatedApiKeyResponse = v.object({
  ...ApiKeyResponse.entries,
  secret: v.pipe(v.string(), v.description('The key itself: shown this once, never again.')),
});

const CreateApiKeyBody = v.strictObject({
  name: v.pipe(
    v.string(),
    v.trim(),
    v.minLength(1, 'must not be empty'),
    v.maxLength(KEY_NAME_MAX, `must be at most ${KEY_NAME_MAX} characters`),
  ),
  scopes: v.pipe(v.array(v.pipe(v.string(), v.maxLength(100))), v.minLength(1, 'must list at least one scope'), v.maxLength(100)),
  mode: v.optional(v.picklist(API_KEY_MODES, `must be ${API_KEY_MODES.join(' or ')}`)),
  expires_at: v.optional(DateTime),
  rate_limit: v.optional(
    v.pipe(
      v.strictObject({
        requests_per_minute: v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1), v.maxValue(1_000_000)),
        burst: v.optional(v.pipe(v.number(), v.integer('must be a whole number'), v.minValue(1), v.maxValue(1_000_000))),
      }),
      v.description("At most the calling key's rate_limit_profile (403 RATE_LIMIT_NOT_HELD); absent: the calling key's own limit."),
    ),
  ),
});

export function createApiKeysRoutes(deps: { keys: WorkspaceKeysService; cursors: CursorCodec; sealedSecret: StoredResponse }) {
  return [
    defineRoute({
      operationId: 'listApiKeys',
      method: 'GET',
      path: '/api-keys',
      summary: "List the workspace's API keys (metadata, never the secret)",
      tag: 'API keys',
      scope: 'api_keys:read',
      extension: true,
      query: PageQuery,
      response: { status: 200, description: 'A page of API keys', schema: ApiKeyResponse, list: true },
      handle: ({ caller, query }) =>
        listResult(
          { cursors: deps.cursors, list: 'api-keys', caller, query },
          (page) => deps.keys.listKeys(caller.orgId, page),
          serializeApiKey,
        ),
    }),
    defineRoute({
      operationId: 'createApiKey',
      method: 'POST',
      path: '/api-keys',
      summary: 'Create an API key',
      description:
        "`scopes` from the catalog (or [\"all\"]), only ones the calling key holds (403 SCOPE_NOT_HELD); gated scopes cannot be granted. `mode` live or test (default the caller's; a test key cannot create a live one, 403 MODE_NOT_HELD). `expires_at` optional, a minute to three years ahead, and no later than the calling key's own expiry (403 EXPIRY_NOT_HELD; absent: the calling key's). `rate_limit` optional, no higher than the calling key's profile (403 RATE_LIMIT_NOT_HELD). Revoking a key revokes the keys it made. The `secret` is in this answer only.",
      tag: 'API keys',
      scope: 'api_keys:write',
      extension: true,
      body: CreateApiKeyBody,
      storedResponse: deps.sealedSecret,
      errors: ['invalid_request', 'forbidden', 'idempotency_conflict'],
      response: { status: 201, description: 'The key, with its secret shown once', schema: CreatedApiKeyResponse },
      handle: async ({ caller, body }) => {
        const { apiKey, key } = await deps.keys.createKey(caller, body);
        return { status: 201, data: { ...serializeApiKey(apiKey), secret: key } };
      },
    }),
    defineRoute({
      operationId: 'revokeApiKey',
      method: 'DELETE',
      path: '/api-keys/:id',
      summary: 'Revoke an API key',
      description: 'Refused on every api replica within 5 seconds (the key lookup cache). Revoking a revoked key changes nothing.',
      tag: 'API keys',
      scope: 'api_keys:write',
      extension: true,
      params: IdParams,
      errors: ['not_found', 'idempotency_conflict'],
      response: { status: 200, description: 'The revoked key', schema: ApiKeyResponse },
      handle: async ({ caller, params }) => ({ status: 200, data: serializeApiKey(await deps.keys.revokeKey(caller.orgId, params.id)) }),
    }),
  ];
}
