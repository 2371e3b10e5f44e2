import { describe, expect, it } from 'vitest';
import { resolveSchedule } from '../../src/modules/sends/schedule.fns.ts';
import {
  base64DecodedLength,
  decodeBase64,
  envelopeRecipients,
  messageIdFor,
  parseFromAddress,
  reservedHeaderNames,
  secondsUntilNextUtcDay,
} from '../../src/modules/sends/sends.fns.ts';

const NOW = new Date('2026-11-21T10:00:00Z');

describe('resolveSchedule', () => {
  it.each([
    ['in 2 hours', '2026-11-21T12:00:00.000Z'],
    ['tomorrow at 9am', '2026-11-22T09:00:00.000Z'],
    ['friday 15:00 UTC', '2026-11-27T15:00:00.000Z'],
    ['2026-11-22T09:00:00Z', '2026-11-22T09:00:00.000Z'],
    ['2026-11-22T09:00:00+02:00', '2026-11-22T07:00:00.000Z'],
    ['2026-11-22 09:00', '2026-11-22T09:00:00.000Z'],
    ['in 30 days', '2026-12-21T10:00:00.000Z'],
  ])('resolves %s to %s (UTC)', (text, iso) => {
    expect(resolveSchedule(text, NOW)).toEqual({ ok: true, at: new Date(iso) });
  });
  it('means now for absent, "now" and up to a minute ago', () => {
    expect(resolveSchedule(undefined, NOW)).toEqual({ ok: true, at: null });
    expect(resolveSchedule('now', NOW)).toEqual({ ok: true, at: null });
    expect(resolveSchedule('2026-11-21T09:59:00Z', NOW)).toEqual({ ok: true, at: null });
  });
  it.each([
    ['2026-11-21T09:58:59Z', 'in_past'],
    ['yesterday', 'in_past'],
    ['in 30 days and 1 minute', 'too_far_ahead'],
    ['2026-12-21T10:00:01Z', 'too_far_ahead'],
    ['in 31 days', 'too_far_ahead'],
    ['2026-02-30T10:00:00Z', 'unparseable'],
    ['send it whenever', 'unparseable'],
    ['tomorrow at 9am please', 'unparseable'],
  ])('refuses %s (%s)', (text, problem) => {
    expect(resolveSchedule(text, NOW)).toMatchObject({ ok: false, problem });
  });
});

describe('parseFromAddress', () => {
  it.each([
    ['orders@shop.example.com', { email: 'orders@shop.example.com', name: null, domain: 'shop.example.com' }],
    ['Shop <orders@Shop.Example.com>', { email: 'orders@shop.example.com', name: 'Shop', domain: 'shop.example.com' }],
    ['"Shop, Inc." <a.b+c@x.example>', { email: 'a.b+c@x.example', name: 'Shop, Inc.', domain: 'x.example' }],
    ['"weird local"@x.example', { email: '"weird local"@x.example', name: null, domain: 'x.example' }],
  ])('reads %s', (text, parsed) => {
    expect(parseFromAddress(text)).toEqual(parsed);
  });
  it.each(['orders', 'orders@', '@x.example', 'a@localhost', 'a b@x.example', 'A <a@x.example', 'a@x.example\r\nBcc: e@x.example'])(
    'refuses %s',
    (text) => {
      expect(parseFromAddress(text)).toBeNull();
    },
  );
});

describe('envelope and headers', () => {
  it('keeps each address once, lower-cased, in its first field', () => {
    expect(envelopeRecipients(['A@x.example', 'b@x.example'], ['a@X.example', 'c@x.example'], ['b@x.example', 'd@x.example'])).toEqual([
      { kind: 'to', email: 'a@x.example' },
      { kind: 'to', email: 'b@x.example' },
      { kind: 'cc', email: 'c@x.example' },
      { kind: 'bcc', email: 'd@x.example' },
    ]);
  });
  it('names the reserved headers case-insensitively', () => {
    expect(reservedHeaderNames({ 'X-Tag': '1', 'message-ID': 'x', BCC: 'y', 'List-Unsubscribe': 'z' })).toEqual(['message-ID', 'BCC']);
  });
  it('reserves the identity headers: every Resent-* field and Sender', () => {
    expect(
      reservedHeaderNames({
        'Resent-From': 'a',
        'resent-date': 'b',
        'RESENT-MESSAGE-ID': 'c',
        Sender: 'd',
        'X-Resent-Note': 'e',
        Resent: 'f',
      }),
    ).toEqual(['Resent-From', 'resent-date', 'RESENT-MESSAGE-ID', 'Sender']);
  });
  it('builds the Message-ID from the email id', () => {
    expect(messageIdFor('0123456789abcdef01234567', 'shop.example')).toBe('0123456789abcdef01234567.0@shop.example');
  });
  it('counts the seconds to the next UTC day', () => {
    expect(secondsUntilNextUtcDay(new Date('2026-11-21T23:59:30Z'))).toBe(30);
  });
});

describe('decodeBase64', () => {
  it('decodes strict base64 with or without padding and line breaks', () => {
    const bytes = Buffer.from([0, 255, 1, 2, 3]);
    expect(decodeBase64(bytes.toString('base64'))?.equals(bytes)).toBe(true);
    expect(decodeBase64(bytes.toString('base64').replace(/=+$/, ''))?.equals(bytes)).toBe(true);
    expect(decodeBase64('AP8B\r\nAgM=')?.equals(bytes)).toBe(true);
    expect(base64DecodedLength(bytes.toString('base64'))).toBe(5);
  });
  it.each(['not base64!', 'AP8B-AgM', 'A', 'AP8=B'])('refuses %s', (text) => {
    expect(decodeBase64(text)).toBeNull();
  });
});
