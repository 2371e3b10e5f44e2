import type { MikroORM } from '@mikro-orm/postgresql';
import { type ApiKeyMode, WebhookEndpoint } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { decryptSecret, encryptSecret } from '../../crypto/secret-box.ts';
import { AppError } from '../../errors.ts';
import type { StoredResponse } from '../idempotency/idempotency.types.ts';
import type { CreateWebhookInput, UpdateWebhookInput } from './webhooks.schemas.ts';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  rotateSecret,
  sendTestEvent,
  updateWebhook,
  type EndpointChangeDeps,
} from './webhook-endpoints.ts';

export {
  checkWebhookUrl,
  DISABLED_OVER_API,
  ENDPOINT_DELETED_ERROR,
  generateSigningSecret,
  normalizeEvents,
} from './webhook-endpoint.fns.ts';

type Envelope = { data?: { secret?: unknown } };

function withSecret(body: unknown, transform: (secret: string) => string): unknown {
  const envelope = body as Envelope;
  const secret = envelope?.data?.secret;
  if (typeof secret !== 'string') return body;
  return { ...envelope, data: { ...envelope.data, secret: transform(secret) } };
}

/**
 * The creation response as kept for Idempotency-Key replays: its secret sealed like the
 * stored one (never plaintext at rest), unsealed only to answer a replay of the same request.
 */
export function sealedSecretResponse(encryptionKeys: readonly Buffer[]): StoredResponse {
  const [encryptionKey] = encryptionKeys;
  const unavailable = () =>
    new AppError('service_unavailable', 'The stored response cannot be unsealed with the configured encryption key; retry later.', {
      reason: 'ENCRYPTION_UNAVAILABLE',
    });
  return {
    seal: (body) =>
      withSecret(body, (secret) => {
        if (!encryptionKey) throw unavailable();
        return encryptSecret(encryptionKey, secret);
      }),
    unseal: (body) =>
      withSecret(body, (sealed) => {
        if (!encryptionKey) throw unavailable();
        try {
          return decryptSecret(encryptionKeys, sealed);
        } catch {
          throw unavailable();
        }
      }),
  };
}

/**
 * Webhook endpoints of one workspace at a time. The signing secret is generated here, stored
 * only sealed (AES-256-GCM under HERALD_ENCRYPTION_KEY) and handed back once to the creator.
 * The use cases are webhook-endpoints.ts; this factory wires them.
 */
export function createWebhooksService(deps: { orm: MikroORM; encryptionKey: Buffer | undefined; allowPrivateTargets: boolean }) {
  const changeDeps: EndpointChangeDeps = {
    orm: deps.orm,
    allowPrivateTargets: deps.allowPrivateTargets,
    encryptionKey: (): Buffer => {
      if (deps.encryptionKey) return deps.encryptionKey;
      throw new AppError(
        'service_unavailable',
        'Webhook signing secrets are encrypted at rest, and secret encryption is not configured on this server; retry later.',
        {
          reason: 'ENCRYPTION_UNAVAILABLE',
        },
      );
    },
  };

  return {
    createWebhook: (orgId: string, keyMode: ApiKeyMode, input: CreateWebhookInput) => createWebhook(changeDeps, orgId, keyMode, input),
    getWebhook: (orgId: string, id: string) => getWebhook(changeDeps, orgId, id),
    updateWebhook: (orgId: string, keyMode: ApiKeyMode, id: string, input: UpdateWebhookInput) =>
      updateWebhook(changeDeps, orgId, keyMode, id, input),
    rotateSecret: (orgId: string, id: string, overlapSeconds: number) => rotateSecret(changeDeps, orgId, id, overlapSeconds),
    deleteWebhook: (orgId: string, id: string) => deleteWebhook(changeDeps, orgId, id),
    sendTestEvent: (orgId: string, id: string) => sendTestEvent(changeDeps, orgId, id),

    /** Newest first, keyset-paginated on (createdAt, id). */
    async listWebhooks(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(deps.orm.em, orgId), WebhookEndpoint, {}, page);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
