import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { type ApiKeyMode, WebhookDelivery, WebhookEndpoint } from '../../../db/entities/index.ts';
import { findKeysetPage, type KeysetPosition } from '../../../db/keyset.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { decryptSecret, encryptSecret } from '../../crypto/secret-box.ts';
import { AppError } from '../../errors.ts';
import type { StoredResponse } from '../idempotency/idempotency.types.ts';
import { ALL_EVENTS } from '../events/events.schemas.ts';
import { recordEvent } from '../events/events.fns.ts';
import { forbiddenRangeOf } from '../../net/address-policy.ts';
import type { CreateWebhookInput, UpdateWebhookInput } from './webhooks.schemas.ts';

/** `disabled_reason` of an endpoint switched off with PATCH `enabled: false`. */
export const DISABLED_OVER_API = 'disabled over the API';
/** `last_error` of the pending deliveries of a deleted endpoint. */
export const ENDPOINT_DELETED_ERROR = 'the webhook endpoint was deleted';

const notFound = (id: string) => new AppError('not_found', `Webhook ${id} does not exist.`);

/** The columns PATCH `enabled` sets, only when it flips the endpoint (a disabled one keeps its reason). */
function enabledChange(current: boolean, wanted: boolean | undefined) {
  if (wanted === undefined || wanted === current) return {};
  return wanted
    ? { enabled: true, disabledReason: null, disabledAt: null }
    : { enabled: false, disabledReason: DISABLED_OVER_API, disabledAt: new Date() };
}

/** `whsec_` + base64 of 32 random bytes: the whole string is the HMAC key (ARCHITECTURE §6). */
export function generateSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

function urlProblem(type: string, message: string, reason: string): AppError {
  return new AppError('invalid_request', `Invalid body.url: ${message}.`, {
    reason,
    fields: [{ path: 'url', location: 'body', type, message }],
  });
}

/**
 * Registration-time URL rules beyond the schema's: a live key registers only https URLs, and
 * unless private targets are allowed, a host that is obviously internal (an IP literal in a
 * forbidden range, `localhost`) is refused now rather than at every delivery. Names that
 * resolve to internal addresses are caught at connect time by the delivery engine.
 */
export function checkWebhookUrl(url: string, keyMode: ApiKeyMode, allowPrivateTargets: boolean): void {
  const parsed = new URL(url);
  if (keyMode === 'live' && parsed.protocol !== 'https:') {
    throw urlProblem('https_required', 'a live key may register only https URLs (test keys may use http)', 'HTTPS_REQUIRED');
  }
  if (allowPrivateTargets) return;
  const host = parsed.hostname
    .replace(/^\[(.*)\]$/, '$1')
    .replace(/\.$/, '')
    .toLowerCase();
  const range = isIP(host) ? forbiddenRangeOf(host) : host === 'localhost' || host.endsWith('.localhost') ? 'loopback' : null;
  if (range !== null) {
    throw urlProblem('forbidden_target', `the host is a ${range} address, which webhooks may not reach`, 'FORBIDDEN_TARGET');
  }
}

/** The subscription as stored: duplicates dropped, and `*` alone when it is listed at all. */
export function normalizeEvents(events: readonly string[]): string[] {
  return events.includes(ALL_EVENTS) ? [ALL_EVENTS] : [...new Set(events)];
}

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
 */
export function createWebhooksService(deps: { orm: MikroORM; encryptionKey: Buffer | undefined; allowPrivateTargets: boolean }) {
  const { orm } = deps;
  /** The key that seals signing secrets, or 503 before anything is written. */
  const encryptionKey = (): Buffer => {
    if (deps.encryptionKey) return deps.encryptionKey;
    throw new AppError(
      'service_unavailable',
      'Webhook signing secrets are encrypted at rest, and secret encryption is not configured on this server; retry later.',
      {
        reason: 'ENCRYPTION_UNAVAILABLE',
      },
    );
  };

  return {
    /**
     * Registers an endpoint and returns it with its plaintext secret (the only time it leaves
     * the server). 503 service_unavailable without an encryption key: nothing is written.
     */
    async createWebhook(
      orgId: string,
      keyMode: ApiKeyMode,
      input: CreateWebhookInput,
    ): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
      const key = encryptionKey();
      checkWebhookUrl(input.url, keyMode, deps.allowPrivateTargets);
      const secret = generateSigningSecret();
      const em = scopeToOrg(orm.em, orgId);
      const endpoint = em.create(WebhookEndpoint, {
        orgId,
        name: input.name,
        url: input.url,
        description: input.description,
        events: normalizeEvents(input.events),
        streams: input.streams ? [...new Set(input.streams)] : null,
        enabled: input.enabled,
        secretEncrypted: encryptSecret(key, secret),
        keyMode,
        disabledReason: null,
        disabledAt: null,
      });
      await em.flush();
      return { endpoint, secret };
    },

    /** One endpoint of the workspace (404 for an unknown id or another workspace's). */
    async getWebhook(orgId: string, id: string): Promise<WebhookEndpoint> {
      const endpoint = await scopeToOrg(orm.em, orgId).findOne(WebhookEndpoint, { id: id.toLowerCase() });
      if (!endpoint) throw notFound(id);
      return endpoint;
    },

    /**
     * Changes any of name, url, events, description, enabled, with the creation rules. A new
     * url must be https when the caller's key or the key that registered the endpoint is live.
     * `enabled: true` clears why Herald disabled it; `enabled: false` on an enabled endpoint
     * records DISABLED_OVER_API (an endpoint already disabled keeps its first reason). Queued
     * and waiting deliveries are left to their workflows: each attempt reads the endpoint anew.
     */
    async updateWebhook(orgId: string, keyMode: ApiKeyMode, id: string, input: UpdateWebhookInput): Promise<WebhookEndpoint> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!endpoint) throw notFound(id);
        if (input.url !== undefined) {
          const strictest: ApiKeyMode = keyMode === 'live' || endpoint.keyMode === 'live' ? 'live' : 'test';
          checkWebhookUrl(input.url, strictest, deps.allowPrivateTargets);
        }
        em.assign(endpoint, {
          ...(input.name !== undefined ? { name: input.name } : {}),
          ...(input.url !== undefined ? { url: input.url } : {}),
          ...(input.events !== undefined ? { events: normalizeEvents(input.events) } : {}),
          ...(input.description !== undefined ? { description: input.description } : {}),
          ...(input.streams !== undefined ? { streams: input.streams ? [...new Set(input.streams)] : null } : {}),
          ...enabledChange(endpoint.enabled, input.enabled),
        });
        await em.flush();
        return endpoint;
      });
    },

    /**
     * Replaces the signing secret and returns the new one (shown this once). The replaced
     * secret keeps signing, as a second signature on every attempt, for `overlapSeconds` (a
     * secret replaced before that is dropped at once: at most two sign an attempt). Attempts
     * read the endpoint's secrets when their drain leases it, so the change applies within a
     * lease period. 503 without an encryption key.
     */
    async rotateSecret(orgId: string, id: string, overlapSeconds: number): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
      const key = encryptionKey();
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!endpoint) throw notFound(id);
        const secret = generateSigningSecret();
        em.assign(endpoint, {
          previousSecretEncrypted: overlapSeconds > 0 ? endpoint.secretEncrypted : null,
          previousSecretExpiresAt: overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null,
          secretEncrypted: encryptSecret(key, secret),
        });
        await em.flush();
        return { endpoint, secret };
      });
    },

    /**
     * Removes the endpoint row (hard delete). Its deliveries and attempts stay in the log; the
     * ones still queued or waiting for a retry end `exhausted` now, and their workflows stop
     * without a request when they wake (the engine leaves a final delivery alone; one it finds
     * without an endpoint it ends `exhausted` too). An attempt already in flight finishes and is
     * recorded.
     */
    async deleteWebhook(orgId: string, id: string): Promise<{ _id: string; deleted: true }> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
        if (!endpoint) throw notFound(id);
        const webhookId = endpoint.id;
        em.remove(endpoint);
        await em.flush();
        await em.nativeUpdate(
          WebhookDelivery,
          { orgId, webhookId, status: { $in: ['queued', 'failed'] } },
          { status: 'exhausted', nextAttemptAt: null, lastError: ENDPOINT_DELETED_ERROR, updatedAt: new Date() },
        );
        return { _id: webhookId, deleted: true as const };
      });
    },

    /**
     * Records a `webhook.test` event addressed to this endpoint alone; the fan-out turns it into
     * a delivery like any other (signed, retried, in the log). 409 conflict (ENDPOINT_DISABLED)
     * for a disabled endpoint, which would never receive it. Returns the event's id.
     */
    async sendTestEvent(orgId: string, id: string): Promise<{ eventId: string }> {
      return scopeToOrg(orm.em, orgId).transactional(async (em) => {
        const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() });
        if (!endpoint) throw notFound(id);
        if (!endpoint.enabled) {
          throw new AppError('conflict', `Webhook ${id} is disabled: enable it to send it a test event.`, {
            reason: 'ENDPOINT_DISABLED',
            webhook_id: endpoint.id,
          });
        }
        const event = recordEvent(em, orgId, 'webhook.test', {
          endpoint_id: endpoint.id,
          message: `A test event for ${endpoint.name}, sent from the Herald dashboard.`,
        });
        await em.flush();
        return { eventId: event.id };
      });
    },

    /** Newest first, keyset-paginated on (createdAt, id). */
    async listWebhooks(orgId: string, page: { limit: number; after?: KeysetPosition | undefined }) {
      return findKeysetPage(scopeToOrg(orm.em, orgId), WebhookEndpoint, {}, page);
    },
  };
}

export type WebhooksService = ReturnType<typeof createWebhooksService>;
