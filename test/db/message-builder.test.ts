import { authenticate } from 'mailauth';
import { simpleParser } from 'mailparser';
import { createTransport } from 'nodemailer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Domain } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import { dkimDnsValue } from '../../src/modules/domains/dkim.fns.ts';
import { createMessageBuilder, type MessageSource } from '../../src/modules/outbound/message-builder.ts';
import { bounceHostOf } from '../../src/modules/sends/sends.fns.ts';
import { createVerpSigner } from '../../src/modules/outbound/verp.ts';
import { createAuthResolver } from '../../src/modules/inbound/auth-results.ts';
import { startDnsServer } from '../support/dns-server.ts';
import { createOrg } from '../support/factories.ts';
import { addSendingDomain } from '../support/sending.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/**
 * The message Herald builds for an email, as a receiving MTA sees it: it parses cleanly with
 * mailparser, carries Message-ID and Date, CRLF line ends only, no line over 998 characters, a
 * plain-text alternative when only HTML was given, and a DKIM signature (d= the sending domain)
 * that verifies with mailauth against the domain's published key.
 */
describe('the built message', () => {
  let stack: TestStack;
  let domain: Domain;

  beforeAll(async () => {
    stack = await createTestStack();
    domain = await addSendingDomain(stack.orm, (await createOrg(stack.orm)).org.id);
  });
  afterAll(() => stack?.close());

  async function rawMessage(overrides: Partial<MessageSource>): Promise<Buffer> {
    const builder = createMessageBuilder({ orm: stack.orm, blobs: null, config: stack.config });
    const id = newId();
    const options = await builder.build(
      {
        id,
        domainId: domain.id,
        fromEmail: `shop@${domain.domain}`,
        fromName: 'Shop',
        subject: 'Your receipt',
        headers: {},
        attachments: [],
        messageId: `${id}.0@${domain.domain}`,
        createdAt: new Date(),
        ...overrides,
      },
      [{ email: 'ada@example.org', kind: 'to' }],
    );
    const info = await createTransport({ streamTransport: true, buffer: true, newline: 'windows' }).sendMail(options);
    return info.message as Buffer;
  }

  /** mailauth's DKIM verdict with the domain's key served as its DNS record. */
  async function dkimOf(raw: Buffer) {
    const result = await authenticate(raw, {
      ip: '127.0.0.1',
      helo: 'herald.test',
      mta: 'mx.example.org',
      sender: `bounce@${domain.domain}`,
      disableBimi: true,
      resolver: (name: string, type: string) =>
        type === 'TXT' && name === `${domain.dkimSelector}._domainkey.${domain.domain}`
          ? Promise.resolve([[dkimDnsValue(domain.dkimPublicKey)]])
          : Promise.reject(Object.assign(new Error(`no ${type} for ${name}`), { code: 'ENOTFOUND' })),
    });
    return result.dkim?.results?.[0];
  }

  it('adds a plain-text alternative to an HTML-only email, and the message is well formed and DKIM-verifiable', async () => {
    const longWord = 'x'.repeat(1200);
    const raw = await rawMessage({
      html: `<h1>Thanks, Ada</h1><p>Your <a href="https://shop.example/orders/7">order 7</a> ships today.</p><img src="https://shop.example/logo.png"><p>${longWord}</p>`,
    });
    const text = raw.toString('latin1');
    expect(text).not.toMatch(/[^\r]\n/);
    expect(Math.max(...text.split('\r\n').map((line) => line.length))).toBeLessThanOrEqual(998);
    const parsed = await simpleParser(raw);
    expect(parsed.messageId).toMatch(new RegExp(`@${domain.domain.replace(/\./g, '\\.')}>$`));
    expect(parsed.date).toBeInstanceOf(Date);
    expect(parsed.html).toContain('<h1>Thanks, Ada</h1>');
    expect(parsed.text).toContain('THANKS, ADA');
    expect(parsed.text).toContain('order 7 [https://shop.example/orders/7]');
    expect(parsed.text).not.toContain('logo.png');
    const dkim = await dkimOf(raw);
    expect(dkim).toMatchObject({ signingDomain: domain.domain, status: { result: 'pass' } });
  });

  it('keeps the text the sender gave', async () => {
    const parsed = await simpleParser(await rawMessage({ html: '<p>Rich</p>', text: 'Plain, as written.' }));
    expect(parsed.text?.trim()).toBe('Plain, as written.');
  });

  it('aligns: SPF for the envelope sender bounces.<domain> (a CNAME to BOUNCE_DOMAIN), DKIM d=<domain>, DMARC pass, against records served by a DNS server on loopback', async () => {
    const bounceDomain = 'bounces.herald-mx.test';
    const dns = await startDnsServer({
      [`bounces.${domain.domain}`]: { CNAME: bounceDomain },
      [bounceDomain]: { TXT: ['v=spf1 ip4:127.0.0.1 -all'] },
      [`${domain.dkimSelector}._domainkey.${domain.domain}`]: { TXT: [dkimDnsValue(domain.dkimPublicKey)] },
      [`_dmarc.${domain.domain}`]: { TXT: ['v=DMARC1; p=reject'] },
    });
    try {
      const id = newId();
      const raw = await rawMessage({ id, messageId: `${id}.0@${domain.domain}`, text: 'Aligned.' });
      const verp = createVerpSigner(stack.config.encryptionKey!);
      const sender = verp.address(id, bounceHostOf(domain.domain));
      expect(sender).toMatch(new RegExp(`^bounce\\+${id}-[0-9a-f]{20}@bounces\\.${domain.domain.replace(/\./g, '\\.')}$`));
      const result = await authenticate(raw, {
        ip: '127.0.0.1',
        helo: 'herald.test',
        mta: 'mx.example.org',
        sender,
        disableBimi: true,
        resolver: createAuthResolver({ dns: { servers: [dns.address], timeoutMs: 2_000, cacheTtlMs: 0 } }),
      });
      expect(result.spf && result.spf.status.result).toBe('pass');
      expect(result.dkim?.results?.[0]).toMatchObject({ signingDomain: domain.domain, status: { result: 'pass' } });
      expect(result.dmarc && result.dmarc.status.result).toBe('pass');
      // Through the BOUNCE_DOMAIN envelope of before, SPF passes but does not align: DMARC rests on DKIM alone.
      const legacy = await authenticate(raw, {
        ip: '127.0.0.1',
        helo: 'herald.test',
        mta: 'mx.example.org',
        sender: verp.address(id, bounceDomain),
        disableBimi: true,
        resolver: createAuthResolver({ dns: { servers: [dns.address], timeoutMs: 2_000, cacheTtlMs: 0 } }),
      });
      expect(legacy.dmarc && legacy.dmarc.status.result).toBe('pass');
      expect(legacy.spf && legacy.spf.domain).toBe(bounceDomain);
    } finally {
      await dns.close();
    }
  });

  it('signs List-Unsubscribe and List-Unsubscribe-Post with DKIM when a transactional email carries them (RFC 8058)', async () => {
    const headers = {
      'List-Unsubscribe': '<https://shop.example.com/unsub/42>, <mailto:unsub@shop.example.com>',
      'List-Unsubscribe-Post': 'List-Unsubscribe=One-Click',
    };
    const raw = await rawMessage({ text: 'With one-click unsubscribe.', headers });
    const parsed = await simpleParser(raw);
    expect(parsed.headerLines.find((line) => line.key === 'list-unsubscribe-post')?.line).toBe(
      'List-Unsubscribe-Post: List-Unsubscribe=One-Click',
    );
    const signed = /^DKIM-Signature:[\s\S]*?\bh=([^;]+);/im.exec(raw.toString('latin1'))?.[1]?.replace(/\s+/g, '').toLowerCase().split(':');
    expect(signed).toEqual(expect.arrayContaining(['list-unsubscribe', 'list-unsubscribe-post']));
    expect(await dkimOf(raw)).toMatchObject({ status: { result: 'pass' } });
    const stripped = Buffer.from(raw.toString('latin1').replace('List-Unsubscribe-Post: List-Unsubscribe=One-Click\r\n', ''), 'latin1');
    expect((await dkimOf(stripped))?.status?.result).not.toBe('pass');
  });

  it('fails DKIM when the message is changed after signing (the check can fail)', async () => {
    const raw = await rawMessage({ text: 'Original body.' });
    const tampered = Buffer.from(raw.toString('latin1').replace('Original body.', 'Changed body!!'), 'latin1');
    // mailauth reports a body that no longer matches its hash as neutral (RFC 6376 §6.3), never pass.
    expect(['neutral', 'fail']).toContain((await dkimOf(tampered))?.status?.result);
  });
});
