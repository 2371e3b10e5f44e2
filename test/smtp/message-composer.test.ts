import { generateKeyPairSync } from 'node:crypto';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { describe, expect, it } from 'vitest';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { composeMessage } from '../../src/modules/outbound/message-composer.ts';

const ENVELOPE = { from: 'bounce+1@bounces.example.com', to: ['reader@example.net'] };

function keyPair() {
  const keys = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return {
    privateKey: keys.privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicKey: keys.publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

function message(privateKey: string, n: number): Mail.Options {
  return {
    from: { name: 'Shop', address: 'shop@example.com' },
    to: ['reader@example.net'],
    subject: `Order ${n}`,
    html: `<p>Order <b>${n}</b></p>`,
    text: `Order ${n}`,
    messageId: `<composer-${n}@example.com>`,
    dkim: { domainName: 'example.com', keySelector: 'herald', privateKey },
  };
}

/** The DKIM verdict of `raw` against `publicKey` published at herald._domainkey.example.com. */
async function dkimResult(raw: Buffer, publicKey: string) {
  const record = dkimDnsValue(publicKey);
  const verified = await dkimVerify(raw, {
    resolver: (name: string, type: string) =>
      type === 'TXT' && name === 'herald._domainkey.example.com'
        ? Promise.resolve([[record]])
        : Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' })),
  });
  return verified.results[0]?.status?.result;
}

/** The composer parses each DKIM key once and signs with the parsed key afterwards. */
describe('composeMessage', () => {
  it('signs every message with the key it names, when keys alternate and repeat', async () => {
    const first = keyPair();
    const second = keyPair();
    for (const [n, keys] of [first, second, first, second].entries()) {
      const raw = await composeMessage(message(keys.privateKey, n), ENVELOPE);
      expect(await dkimResult(raw, keys.publicKey)).toBe('pass');
      const other = keys === first ? second : first;
      expect(await dkimResult(raw, other.publicKey)).not.toBe('pass');
    }
  });

  it('leaves the caller’s message as it was (the PEM text, not the parsed key)', async () => {
    const keys = keyPair();
    const given = message(keys.privateKey, 7);
    await composeMessage(given, ENVELOPE);
    expect((given.dkim as { privateKey: unknown }).privateKey).toBe(keys.privateKey);
  });

  it('composes a message whose key does not parse without a signature, as nodemailer does', async () => {
    const raw = await composeMessage(message('-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n', 9), ENVELOPE);
    const text = raw.toString('latin1');
    expect(text).toContain('Subject: Order 9');
    expect(text).not.toMatch(/^DKIM-Signature:/im);
  });
});
