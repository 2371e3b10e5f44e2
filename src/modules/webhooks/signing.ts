import { createHmac, createSecretKey, timingSafeEqual, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/**
 * Webhook signatures. Every attempt is signed afresh with the endpoint's secret (`whsec_…`):
 *
 * - `Herald-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<raw body>">`, keyed with the
 *   whole secret string (prefix included), exactly what `stripe.webhooks.constructEvent` checks;
 * - Standard Webhooks: `webhook-id` (the delivery id), `webhook-timestamp` (the same t) and
 *   `webhook-signature: v1,<base64 HMAC-SHA256 of "<id>.<t>.<raw body>">`, keyed with the
 *   base64-decoded part after `whsec_`, which the `standardwebhooks` libraries check.
 *
 * The signed body is the exact byte sequence sent; receivers must verify the raw body before
 * parsing it. docs/webhooks.md has a test vector.
 */

export const HERALD_SIGNATURE_HEADER = 'Herald-Signature';
export const SECRET_PREFIX = 'whsec_';
export const DEFAULT_TOLERANCE_SECONDS = 300;

export interface SignInput {
  /** The endpoint's signing secret, `whsec_` + base64. */
  secret: string;
  /**
   * The secret it replaced, while a rotation's overlap lasts: the attempt then carries a
   * signature with each (the new one first), so receivers verify with either.
   */
  previousSecret?: string | null | undefined;
  /** The delivery id: `webhook-id`, stable across attempts and replays. */
  deliveryId: string;
  /** Unix seconds of this attempt. */
  timestamp: number;
  /** The raw request body exactly as sent. */
  body: string;
}

/**
 * A secret's two HMAC keys as key objects, made once per secret: keying an HMAC with a string
 * or Buffer imports the key on every call, about two thirds of a signature's cost.
 */
const signingKeys = new LRUCache<string, { whole: KeyObject; standard: KeyObject }>({ max: 10_000 });
function keysOf(secret: string): { whole: KeyObject; standard: KeyObject } {
  let keys = signingKeys.get(secret);
  if (keys === undefined) {
    keys = { whole: createSecretKey(Buffer.from(secret, 'utf8')), standard: createSecretKey(standardWebhooksKey(secret)) };
    signingKeys.set(secret, keys);
  }
  return keys;
}

function hmac(key: KeyObject, content: string): Buffer {
  return createHmac('sha256', key).update(content, 'utf8').digest();
}

/** One `v1=` entry of Herald-Signature: the hex HMAC-SHA256 of "<t>.<body>" keyed with the whole secret. */
function heraldV1(secret: string, timestamp: number, body: string): string {
  return `v1=${hmac(keysOf(secret).whole, `${timestamp}.${body}`).toString('hex')}`;
}

/** The `Herald-Signature` value: `t=<timestamp>,v1=<hex HMAC-SHA256("<t>.<body>") keyed with the whole secret>`. */
export function heraldSignature(secret: string, timestamp: number, body: string): string {
  return `t=${timestamp},${heraldV1(secret, timestamp, body)}`;
}

/** The Standard Webhooks key: the base64-decoded part of the secret after `whsec_`. */
export function standardWebhooksKey(secret: string): Buffer {
  return Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64');
}

/** The `webhook-signature` value: `v1,<base64 HMAC-SHA256("<id>.<t>.<body>")>`. */
export function standardWebhooksSignature(secret: string, id: string, timestamp: number, body: string): string {
  return `v1,${hmac(keysOf(secret).standard, `${id}.${timestamp}.${body}`).toString('base64')}`;
}

/**
 * Every signature header of one attempt. During a rotation's overlap each carries one
 * signature per secret: `Herald-Signature: t=…,v1=<new>,v1=<previous>` (as Stripe does) and
 * `webhook-signature: v1,<new> v1,<previous>` (space-separated, as Standard Webhooks defines).
 */
export function signatureHeaders(input: SignInput): Record<string, string> {
  const secrets = input.previousSecret ? [input.secret, input.previousSecret] : [input.secret];
  return {
    [HERALD_SIGNATURE_HEADER]: [`t=${input.timestamp}`, ...secrets.map((secret) => heraldV1(secret, input.timestamp, input.body))].join(
      ',',
    ),
    'webhook-id': input.deliveryId,
    'webhook-timestamp': String(input.timestamp),
    'webhook-signature': secrets
      .map((secret) => standardWebhooksSignature(secret, input.deliveryId, input.timestamp, input.body))
      .join(' '),
  };
}

/** A `Herald-Signature` that does not verify; `code` is the API error code that describes it. */
export class WebhookSignatureError extends Error {
  readonly code = 'webhook_signature_invalid';
  constructor(message: string) {
    super(message);
    this.name = 'WebhookSignatureError';
  }
}

/**
 * Verifies a `Herald-Signature` header against the raw request body (a Buffer or the exact
 * string received). Accepts the header when any `v1` entry matches (several appear while a
 * secret is being rotated) and the timestamp is at most `toleranceSeconds` away from now (past or
 * future; 0 turns the age check off). Returns the signed timestamp; throws WebhookSignatureError
 * (code webhook_signature_invalid) saying what is wrong otherwise. Comparisons are constant-time.
 */
export function verifyHeraldSignature(
  rawBody: string | Buffer,
  header: string | null | undefined,
  secret: string,
  toleranceSeconds: number = DEFAULT_TOLERANCE_SECONDS,
  nowSeconds: number = Math.floor(Date.now() / 1000),
): number {
  if (!header) throw new WebhookSignatureError('missing Herald-Signature header');
  let timestamp: number | undefined;
  const signatures: string[] = [];
  for (const item of header.split(',')) {
    const separator = item.indexOf('=');
    if (separator < 0) continue;
    const key = item.slice(0, separator).trim();
    const value = item.slice(separator + 1).trim();
    if (key === 't' && /^\d+$/.test(value)) timestamp = Number(value);
    else if (key === 'v1') signatures.push(value);
  }
  if (timestamp === undefined) throw new WebhookSignatureError('Herald-Signature has no timestamp (t=)');
  if (signatures.length === 0) throw new WebhookSignatureError('Herald-Signature has no v1 signature');
  // Over the bytes received, so a body that is not valid UTF-8 is compared exactly too.
  const expected = createHmac('sha256', secret)
    .update(`${timestamp}.`, 'utf8')
    .update(typeof rawBody === 'string' ? Buffer.from(rawBody, 'utf8') : rawBody)
    .digest();
  const matches = signatures.some((signature) => {
    if (!/^[0-9a-f]{64}$/.test(signature)) return false;
    return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
  });
  if (!matches) throw new WebhookSignatureError('no v1 signature matches the body and secret');
  if (toleranceSeconds > 0 && Math.abs(nowSeconds - timestamp) > toleranceSeconds) {
    throw new WebhookSignatureError(`timestamp is more than ${toleranceSeconds} s away from now`);
  }
  return timestamp;
}
