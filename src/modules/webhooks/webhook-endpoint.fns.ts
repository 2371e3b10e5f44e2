import { randomBytes } from 'node:crypto';
import { isIP } from 'node:net';
import type { ApiKeyMode } from '../../../db/entities/index.ts';
import { AppError } from '../../errors.ts';
import { forbiddenRangeOf } from '../../net/address-policy.ts';
import { ALL_EVENTS } from '../events/events.schemas.ts';

/** `disabled_reason` of an endpoint switched off with PATCH `enabled: false`. */
export const DISABLED_OVER_API = 'disabled over the API';
/** `last_error` of the pending deliveries of a deleted endpoint. */
export const ENDPOINT_DELETED_ERROR = 'the webhook endpoint was deleted';

export const webhookNotFound = (id: string) => new AppError('not_found', `Webhook ${id} does not exist.`);

/** The columns PATCH `enabled` sets, only when it flips the endpoint (a disabled one keeps its reason). */
export function enabledChange(current: boolean, wanted: boolean | undefined) {
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
