import { describe, expect, it } from 'vitest';
import { createRecipientLinks, UNSUBSCRIBE_LINK_TTL_SECONDS } from '../../src/modules/broadcasts/recipient-links.ts';

const key = Buffer.alloc(32, 3);
const links = createRecipientLinks(key, 'https://herald.example');
const emailId = '6b06cc969013e435fbbd93c8';
const tokenOf = (url: string) => url.slice('https://herald.example/unsubscribe/'.length);

describe('unsubscribe links', () => {
  it('verifies its own token until it expires, and not a second after', () => {
    const now = new Date('2026-11-25T12:00:00Z');
    const token = tokenOf(links.url(emailId, now));
    expect(links.check(token, now)).toEqual({ ok: true, claim: { emailId, expires: now.getTime() / 1000 + UNSUBSCRIBE_LINK_TTL_SECONDS } });
    expect(links.check(token, new Date(now.getTime() + UNSUBSCRIBE_LINK_TTL_SECONDS * 1000)).ok).toBe(true);
    expect(links.check(token, new Date(now.getTime() + UNSUBSCRIBE_LINK_TTL_SECONDS * 1000 + 1000))).toEqual({
      ok: false,
      reason: 'expired',
    });
  });

  it('refuses every other spelling of the signature, another id, another expiry and another key', () => {
    const token = tokenOf(links.url(emailId));
    const [id, expires, signature] = token.split('.') as [string, string, string];
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    // Every variant of the last character (4 of its 6 bits are padding) and of the first.
    for (const position of [0, signature.length - 1]) {
      for (const c of alphabet) {
        if (c === signature[position]) continue;
        const altered = signature.slice(0, position) + c + signature.slice(position + 1);
        expect(links.check(`${id}.${expires}.${altered}`).ok, altered).toBe(false);
      }
    }
    expect(links.check(`${'0'.repeat(24)}.${expires}.${signature}`)).toEqual({ ok: false, reason: 'invalid' });
    expect(links.check(`${id}.${(Number.parseInt(expires, 36) + 1).toString(36)}.${signature}`)).toEqual({ ok: false, reason: 'invalid' });
    expect(createRecipientLinks(Buffer.alloc(32, 4), 'https://herald.example').check(token)).toEqual({ ok: false, reason: 'invalid' });
    for (const malformed of [
      '',
      'x',
      `${id}.${expires}`,
      `${id.toUpperCase()}.${expires}.${signature}`,
      `${id}.${expires}.${signature}=`,
      `${id}..${signature}`,
    ]) {
      expect(links.check(malformed)).toEqual({ ok: false, reason: 'invalid' });
    }
  });
});

describe('tracking links', () => {
  it('binds a click token to its message and exact target, and an open token to its message', () => {
    const target = 'https://shop.example/a?x=1&y=2';
    const click = new URL(links.clickUrl(emailId, target));
    expect(click.searchParams.get('u')).toBe(target);
    const token = click.pathname.split('/').at(-1)!;
    expect(links.checkClick(token, target)).toBe(emailId);
    for (const other of ['https://shop.example/a?x=1&y=3', 'https://evil.example/', `${target}#`, 'https://shop.example/a?x=1&y=2 ']) {
      expect(links.checkClick(token, other), other).toBeNull();
    }
    const open = links
      .openUrl(emailId)
      .split('/')
      .at(-1)!
      .replace(/\.gif$/, '');
    expect(links.checkOpen(open)).toBe(emailId);
    // A token of one kind is not valid as another.
    expect(links.checkOpen(token)).toBeNull();
    expect(links.checkClick(open, target)).toBeNull();
  });
});
