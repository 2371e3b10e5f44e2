import { LockMode } from '@mikro-orm/core';
import type { MikroORM } from '@mikro-orm/postgresql';
import { WebhookDelivery, WebhookEndpoint, type ApiKeyMode } from '../../../db/entities/index.ts';
import { scopeToOrg } from '../../../db/orm.ts';
import { encryptSecret } from '../../crypto/secret-box.ts';
import { AppError } from '../../errors.ts';
import { recordEvent } from '../events/events.fns.ts';
import {
  checkWebhookUrl,
  enabledChange,
  ENDPOINT_DELETED_ERROR,
  generateSigningSecret,
  normalizeEvents,
  webhookNotFound,
} from './webhook-endpoint.fns.ts';
import type { CreateWebhookInput, UpdateWebhookInput } from './webhooks.schemas.ts';

/** What changing a workspace's webhook endpoints needs (built once by createWebhooksService). */
export interface EndpointChangeDeps {
  orm: MikroORM;
  /** The key that seals signing secrets, or 503 before anything is written. */
  encryptionKey: () => Buffer;
  allowPrivateTargets: boolean;
}

/**
 * Registers an endpoint and returns it with its plaintext secret (the only time it leaves
 * the server). 503 service_unavailable without an encryption key: nothing is written.
 */
export async function createWebhook(
  deps: EndpointChangeDeps,
  orgId: string,
  keyMode: ApiKeyMode,
  input: CreateWebhookInput,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const key = deps.encryptionKey();
  checkWebhookUrl(input.url, keyMode, deps.allowPrivateTargets);
  const secret = generateSigningSecret();
  const em = scopeToOrg(deps.orm.em, orgId);
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
}

/** One endpoint of the workspace (404 for an unknown id or another workspace's). */
export async function getWebhook(deps: EndpointChangeDeps, orgId: string, id: string): Promise<WebhookEndpoint> {
  const endpoint = await scopeToOrg(deps.orm.em, orgId).findOne(WebhookEndpoint, { id: id.toLowerCase() });
  if (!endpoint) throw webhookNotFound(id);
  return endpoint;
}

/**
 * Changes any of name, url, events, description, enabled, with the creation rules. A new
 * url must be https when the caller's key or the key that registered the endpoint is live.
 * `enabled: true` clears why Herald disabled it; `enabled: false` on an enabled endpoint
 * records DISABLED_OVER_API (an endpoint already disabled keeps its first reason). Queued
 * and waiting deliveries are left to their workflows: each attempt reads the endpoint anew.
 */
export async function updateWebhook(
  deps: EndpointChangeDeps,
  orgId: string,
  keyMode: ApiKeyMode,
  id: string,
  input: UpdateWebhookInput,
): Promise<WebhookEndpoint> {
  return scopeToOrg(deps.orm.em, orgId).transactional(async (em) => {
    const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!endpoint) throw webhookNotFound(id);
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
}

/**
 * Replaces the signing secret and returns the new one (shown this once). The replaced
 * secret keeps signing, as a second signature on every attempt, for `overlapSeconds` (a
 * secret replaced before that is dropped at once: at most two sign an attempt). Attempts
 * read the endpoint's secrets when their drain leases it, so the change applies within a
 * lease period. 503 without an encryption key.
 */
export async function rotateSecret(
  deps: EndpointChangeDeps,
  orgId: string,
  id: string,
  overlapSeconds: number,
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const key = deps.encryptionKey();
  return scopeToOrg(deps.orm.em, orgId).transactional(async (em) => {
    const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!endpoint) throw webhookNotFound(id);
    const secret = generateSigningSecret();
    em.assign(endpoint, {
      previousSecretEncrypted: overlapSeconds > 0 ? endpoint.secretEncrypted : null,
      previousSecretExpiresAt: overlapSeconds > 0 ? new Date(Date.now() + overlapSeconds * 1000) : null,
      secretEncrypted: encryptSecret(key, secret),
    });
    await em.flush();
    return { endpoint, secret };
  });
}

/**
 * Removes the endpoint row (hard delete). Its deliveries and attempts stay in the log; the
 * ones still queued or waiting for a retry end `exhausted` now, and their workflows stop
 * without a request when they wake (the engine leaves a final delivery alone; one it finds
 * without an endpoint it ends `exhausted` too). An attempt already in flight finishes and is
 * recorded.
 */
export async function deleteWebhook(deps: EndpointChangeDeps, orgId: string, id: string): Promise<{ _id: string; deleted: true }> {
  return scopeToOrg(deps.orm.em, orgId).transactional(async (em) => {
    const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!endpoint) throw webhookNotFound(id);
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
}

/**
 * Records a `webhook.test` event addressed to this endpoint alone; the fan-out turns it into
 * a delivery like any other (signed, retried, in the log). 409 conflict (ENDPOINT_DISABLED)
 * for a disabled endpoint, which would never receive it. Returns the event's id.
 */
export async function sendTestEvent(deps: EndpointChangeDeps, orgId: string, id: string): Promise<{ eventId: string }> {
  return scopeToOrg(deps.orm.em, orgId).transactional(async (em) => {
    const endpoint = await em.findOne(WebhookEndpoint, { id: id.toLowerCase() });
    if (!endpoint) throw webhookNotFound(id);
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
}
