import { Webhook } from 'standardwebhooks';
import Stripe from 'stripe';
import { describe, expect, it } from 'vitest';
import {
  heraldSignature,
  signatureHeaders,
  standardWebhooksSignature,
  verifyHeraldSignature,
  WebhookSignatureError,
} from '../../src/modules/webhooks/signing.ts';

/** The test vector published in docs/webhooks.md (cross-checked with Python's hmac module). */
const VECTOR = {
  secret: 'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=',
  deliveryId: '69558b000000000000000001',
  timestamp: 1767225600,
  body: '{"id":"69558b000000000000000abc","object":"event","type":"contact.created","created_at":"2026-01-01T00:00:00.000Z","api_version":"1.0.0","data":{"contact":{"_id":"69558b000000000000000def","email":"ada@example.com"}}}',
  heraldSignature: 't=1767225600,v1=1018b536a79d83efdf1724ca81f542b7224446ab3005b1b8bf1be8578224602d',
  webhookSignature: 'v1,8wT27RHOMM8JsKaiPo+Ys6R6S+dkd21l8V+3X4sZhew=',
};

const stripe = new Stripe('sk_test_unused');

describe('webhook signing', () => {
  it('produces the documented test vector', () => {
    expect(heraldSignature(VECTOR.secret, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.heraldSignature);
    expect(standardWebhooksSignature(VECTOR.secret, VECTOR.deliveryId, VECTOR.timestamp, VECTOR.body)).toBe(VECTOR.webhookSignature);
    expect(signatureHeaders(VECTOR)).toEqual({
      'Herald-Signature': VECTOR.heraldSignature,
      'webhook-id': VECTOR.deliveryId,
      'webhook-timestamp': String(VECTOR.timestamp),
      'webhook-signature': VECTOR.webhookSignature,
    });
  });

  it('is accepted by stripe.webhooks.constructEvent and by standardwebhooks Webhook.verify', () => {
    const receivedAt = (VECTOR.timestamp + 10) * 1000;
    const event = stripe.webhooks.constructEvent(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 300, undefined, receivedAt);
    expect(event).toMatchObject({ id: '69558b000000000000000abc', object: 'event', type: 'contact.created' });

    const now = Math.floor(Date.now() / 1000);
    const fresh = signatureHeaders({ ...VECTOR, timestamp: now });
    expect(stripe.webhooks.constructEvent(Buffer.from(VECTOR.body), fresh['Herald-Signature']!, VECTOR.secret)).toMatchObject({
      type: 'contact.created',
    });
    expect(new Webhook(VECTOR.secret).verify(VECTOR.body, fresh)).toMatchObject({ id: '69558b000000000000000abc' });
  });

  it('is rejected by both libraries when the body, secret or id differ', () => {
    const now = Math.floor(Date.now() / 1000);
    const headers = signatureHeaders({ ...VECTOR, timestamp: now });
    const tampered = VECTOR.body.replace('ada@', 'eve@');
    expect(() => stripe.webhooks.constructEvent(tampered, headers['Herald-Signature']!, VECTOR.secret)).toThrow();
    expect(() => stripe.webhooks.constructEvent(VECTOR.body, headers['Herald-Signature']!, 'whsec_other')).toThrow();
    expect(() => new Webhook(VECTOR.secret).verify(tampered, headers)).toThrow();
    expect(() => new Webhook(VECTOR.secret).verify(VECTOR.body, { ...headers, 'webhook-id': '69558b000000000000000002' })).toThrow();
  });

  it('signs with both secrets during a rotation, each accepted by both libraries and by verifyHeraldSignature', () => {
    const now = Math.floor(Date.now() / 1000);
    const previous = 'whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=';
    const headers = signatureHeaders({ ...VECTOR, previousSecret: previous, timestamp: now });
    expect(headers['Herald-Signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(headers['webhook-signature']!.split(' ')).toHaveLength(2);
    for (const secret of [VECTOR.secret, previous]) {
      expect(stripe.webhooks.constructEvent(VECTOR.body, headers['Herald-Signature']!, secret)).toMatchObject({ type: 'contact.created' });
      expect(new Webhook(secret).verify(VECTOR.body, headers)).toMatchObject({ id: '69558b000000000000000abc' });
      expect(verifyHeraldSignature(VECTOR.body, headers['Herald-Signature'], secret)).toBe(now);
    }
    expect(() => new Webhook('whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=').verify(VECTOR.body, headers)).toThrow();
    // Without a previous secret: exactly the single-signature headers.
    expect(signatureHeaders({ ...VECTOR, previousSecret: null })).toEqual(signatureHeaders(VECTOR));
  });

  describe('verifyHeraldSignature', () => {
    const at = VECTOR.timestamp + 60;

    it('accepts the vector (string or Buffer body) and returns the signed timestamp', () => {
      expect(verifyHeraldSignature(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 300, at)).toBe(VECTOR.timestamp);
      expect(verifyHeraldSignature(Buffer.from(VECTOR.body), VECTOR.heraldSignature, VECTOR.secret, 300, at)).toBe(VECTOR.timestamp);
    });

    it('accepts any matching v1 among several (secret rotation) and ignores unknown schemes', () => {
      const other = heraldSignature('whsec_old', VECTOR.timestamp, VECTOR.body).split(',')[1]!;
      const header = `t=${VECTOR.timestamp},${other},v0=abc,${VECTOR.heraldSignature.split(',')[1]!}`;
      expect(verifyHeraldSignature(VECTOR.body, header, VECTOR.secret, 300, at)).toBe(VECTOR.timestamp);
    });

    it('honours the tolerance on both sides, and 0 turns it off', () => {
      expect(verifyHeraldSignature(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 300, VECTOR.timestamp + 300)).toBe(VECTOR.timestamp);
      expect(verifyHeraldSignature(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 300, VECTOR.timestamp - 300)).toBe(VECTOR.timestamp);
      expect(() => verifyHeraldSignature(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 300, VECTOR.timestamp + 301)).toThrow(/300 s/);
      expect(() => verifyHeraldSignature(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 300, VECTOR.timestamp - 301)).toThrow(/300 s/);
      expect(verifyHeraldSignature(VECTOR.body, VECTOR.heraldSignature, VECTOR.secret, 0, VECTOR.timestamp + 86_400)).toBe(
        VECTOR.timestamp,
      );
    });

    it.each([
      ['no header', undefined, VECTOR.body, VECTOR.secret, /missing/],
      ['empty header', '', VECTOR.body, VECTOR.secret, /missing/],
      ['no timestamp', VECTOR.heraldSignature.split(',')[1], VECTOR.body, VECTOR.secret, /no timestamp/],
      ['no v1', `t=${VECTOR.timestamp}`, VECTOR.body, VECTOR.secret, /no v1/],
      ['other timestamp', VECTOR.heraldSignature.replace('t=1767225600', 't=1767225601'), VECTOR.body, VECTOR.secret, /matches/],
      ['tampered body', VECTOR.heraldSignature, VECTOR.body + ' ', VECTOR.secret, /matches/],
      ['wrong secret', VECTOR.heraldSignature, VECTOR.body, 'whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8', /matches/],
      ['truncated signature', VECTOR.heraldSignature.slice(0, -2), VECTOR.body, VECTOR.secret, /matches/],
      [
        'uppercase hex',
        VECTOR.heraldSignature.toUpperCase().replace('T=', 't=').replace('V1=', 'v1='),
        VECTOR.body,
        VECTOR.secret,
        /matches/,
      ],
    ])('rejects %s with webhook_signature_invalid', (_name, header, body, secret, message) => {
      let caught: unknown;
      try {
        verifyHeraldSignature(body, header, secret, 300, at);
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(WebhookSignatureError);
      expect((caught as WebhookSignatureError).code).toBe('webhook_signature_invalid');
      expect((caught as Error).message).toMatch(message);
    });
  });
});
