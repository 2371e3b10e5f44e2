import { describe, expect, it } from 'vitest';
import { buildArfReport, headerBlock } from '../../src/modules/sandbox/arf-report.ts';
import { escapeHtml } from '../../src/html-escape.ts';
import { rcptReply, simulatedMailbox, softBounceKey } from '../../src/modules/sandbox/mailbox-simulator.ts';

const SIM = 'simulator.herald.test';

describe('mail sink simulator rules', () => {
  it.each([
    [`delivered@${SIM}`, 'delivered'],
    [`Bounce@SIMULATOR.herald.test`, 'bounce'],
    [`softbounce+run7@${SIM}`, 'softbounce'],
    [`complaint@${SIM}`, 'complaint'],
    [`SUPPRESSED@${SIM}`, 'suppressed'],
    [`whatever@${SIM}`, 'delivered'],
    ['bounce@example.com', null],
    [`bounce@sub.${SIM}`, null],
    ['no-at-sign', null],
  ])('classifies %s as %s', (address, expected) => {
    expect(simulatedMailbox(address, SIM)).toBe(expected);
  });

  it('defers softbounce@ exactly softBounceAttempts times, then accepts', () => {
    expect(rcptReply('softbounce', 0, 2)).toMatchObject({ reply: { code: 451 }, countsSoftBounce: true });
    expect(rcptReply('softbounce', 1, 2)).toMatchObject({ reply: { code: 451 }, countsSoftBounce: true });
    expect(rcptReply('softbounce', 2, 2)).toMatchObject({ reply: { code: 250 }, countsSoftBounce: false });
    expect(rcptReply('softbounce', 0, 0)).toMatchObject({ reply: { code: 250 } });
  });

  it('answers bounce@ and suppressed@ 550 5.1.1 and everything else 250', () => {
    expect(rcptReply('bounce', 0, 2).reply).toMatchObject({ code: 550, message: expect.stringMatching(/^5\.1\.1 /) as unknown });
    expect(rcptReply('suppressed', 0, 2).reply).toEqual({ code: 550, message: '5.1.1 address on suppression list' });
    expect(rcptReply('complaint', 0, 2).reply.code).toBe(250);
    expect(rcptReply(null, 0, 2).reply.code).toBe(250);
  });

  it('counts soft bounces per envelope sender and recipient, case-insensitively', () => {
    expect(softBounceKey('Bounce+A@x.test', 'SoftBounce@Sim')).toBe(softBounceKey('bounce+a@x.test', 'softbounce@sim'));
    expect(softBounceKey('bounce+a@x.test', 'softbounce@sim')).not.toBe(softBounceKey('bounce+b@x.test', 'softbounce@sim'));
  });
});

describe('mail sink helpers', () => {
  it('cuts the header block at the first empty line (CRLF or LF)', () => {
    expect(headerBlock(Buffer.from('A: 1\r\nB: 2\r\n\r\nbody\r\n\r\nmore')).toString()).toBe('A: 1\r\nB: 2');
    expect(headerBlock(Buffer.from('A: 1\nB: 2\n\nbody')).toString()).toBe('A: 1\nB: 2');
    expect(headerBlock(Buffer.from('A: 1')).toString()).toBe('A: 1');
  });

  it('escapes HTML metacharacters', () => {
    expect(escapeHtml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;');
  });

  it('builds an ARF report that quotes the original headers and names the envelope', () => {
    const report = buildArfReport({
      original: {
        receivedAt: '2026-11-21T08:00:00.000Z',
        mailFrom: 'bounce+e1@bounces.example.com',
        messageId: 'm1@brand.example',
        raw: Buffer.from('From: "Brand" <news@Brand.Example>\r\nMessage-ID: <m1@brand.example>\r\n\r\nbody'),
      },
      complainant: `complaint@${SIM}`,
      fromAddress: `feedback@${SIM}`,
    }).toString();
    expect(report).toMatch(/^Content-Type: multipart\/report; report-type=feedback-report; boundary="[^"]+"$/m);
    expect(report).toContain('Arrival-Date: Sat, 21 Nov 2026 08:00:00 +0000');
    expect(report).toContain('Reported-Domain: brand.example');
    expect(report).toContain('Original-Mail-From: <bounce+e1@bounces.example.com>');
    expect(report).toMatch(
      /Content-Type: text\/rfc822-headers\r\n\r\nFrom: "Brand" <news@Brand.Example>\r\nMessage-ID: <m1@brand.example>\r\n\r\n--/,
    );
    expect(report).not.toContain('body');
  });
});
