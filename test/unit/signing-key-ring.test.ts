import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { createUploadUrlSigner } from '../../src/modules/attachments/upload-url.ts';
import { createRecipientLinks } from '../../src/modules/broadcasts/recipient-links.ts';
import { createVerpSigner } from '../../src/modules/outbound/verp.ts';
import { createCursorCodec } from '../../src/http/cursor.ts';

/**
 * Signed links across a key rotation: with the ring [new, old], what the old key signed still
 * verifies, what is signed now is signed with the new key (the old key alone refuses it), and a
 * key outside the ring verifies nothing.
 */
const oldKey = randomBytes(32);
const newKey = randomBytes(32);
const ring = [newKey, oldKey];
const stranger = randomBytes(32);
const PUBLIC_URL = 'https://herald.example';
const emailId = '6b06cc969013e435fbbd93c8';

describe('signed links with a two-key ring', () => {
  it('unsubscribe links: an old-key link verifies, a new one is signed with the new key', () => {
    const rotated = createRecipientLinks(ring, PUBLIC_URL);
    const token = (url: string) => url.slice(`${PUBLIC_URL}/unsubscribe/`.length);
    const before = token(createRecipientLinks(oldKey, PUBLIC_URL).url(emailId));
    expect(rotated.check(before).ok).toBe(true);

    const after = token(rotated.url(emailId));
    expect(createRecipientLinks(newKey, PUBLIC_URL).check(after).ok).toBe(true);
    expect(createRecipientLinks(oldKey, PUBLIC_URL).check(after)).toEqual({ ok: false, reason: 'invalid' });
    expect(rotated.check(after).ok).toBe(true);
    expect(createRecipientLinks(stranger, PUBLIC_URL).check(before)).toEqual({ ok: false, reason: 'invalid' });
    expect(createRecipientLinks([newKey], PUBLIC_URL).check(before)).toEqual({ ok: false, reason: 'invalid' });
  });

  it('open pixels and tracked links: old-key tokens verify, new ones carry the new key', () => {
    const rotated = createRecipientLinks(ring, PUBLIC_URL);
    const old = createRecipientLinks(oldKey, PUBLIC_URL);
    const pixel = (url: string) => url.slice(`${PUBLIC_URL}/t/o/`.length, -'.gif'.length);
    const click = (url: string) => new URL(url).pathname.slice('/t/c/'.length);
    const target = 'https://shop.example/sale?x=1';

    expect(rotated.checkOpen(pixel(old.openUrl(emailId)))).toBe(emailId);
    expect(rotated.checkClick(click(old.clickUrl(emailId, target)), target)).toBe(emailId);
    expect(rotated.checkClick(click(old.clickUrl(emailId, target)), 'https://elsewhere.example/')).toBeNull();

    const newPixel = pixel(rotated.openUrl(emailId));
    expect(createRecipientLinks(newKey, PUBLIC_URL).checkOpen(newPixel)).toBe(emailId);
    expect(old.checkOpen(newPixel)).toBeNull();
    const newClick = click(rotated.clickUrl(emailId, target));
    expect(createRecipientLinks(newKey, PUBLIC_URL).checkClick(newClick, target)).toBe(emailId);
    expect(old.checkClick(newClick, target)).toBeNull();
    expect(createRecipientLinks(stranger, PUBLIC_URL).checkOpen(newPixel)).toBeNull();
  });

  it('upload URLs of both purposes: an old-key URL verifies, a new one is signed with the new key', () => {
    const claim = { attachmentId: '6b0160fda0137013257687ee', contentType: 'text/csv', sizeBytes: 0, expires: 1_795_255_200 };
    for (const purpose of ['attachment', 'contact-import'] as const) {
      const rotated = createUploadUrlSigner(ring, PUBLIC_URL, purpose);
      const oldSig = createUploadUrlSigner(oldKey, PUBLIC_URL, purpose).sign(claim);
      expect(rotated.verify(claim, oldSig), purpose).toBe(true);
      expect(rotated.verify({ ...claim, sizeBytes: 1 }, oldSig), purpose).toBe(false);

      const newSig = new URL(rotated.url(claim)).searchParams.get('sig')!;
      expect(newSig).toBe(createUploadUrlSigner(newKey, PUBLIC_URL, purpose).sign(claim));
      expect(newSig).not.toBe(oldSig);
      expect(createUploadUrlSigner(oldKey, PUBLIC_URL, purpose).verify(claim, newSig), purpose).toBe(false);
      expect(createUploadUrlSigner(stranger, PUBLIC_URL, purpose).verify(claim, oldSig), purpose).toBe(false);
    }
    // A signature for one purpose still does not work for the other under a ring.
    const attachmentSig = createUploadUrlSigner(oldKey, PUBLIC_URL, 'attachment').sign(claim);
    expect(createUploadUrlSigner(ring, PUBLIC_URL, 'contact-import').verify(claim, attachmentSig)).toBe(false);
  });

  it('VERP return paths: a bounce to an old-key address is verified, new addresses carry the new key', () => {
    const host = 'bounces.acme.example';
    const rotated = createVerpSigner(ring);
    const oldAddress = createVerpSigner(oldKey).address(emailId, host);
    expect(rotated.check(oldAddress, 'herald.example')).toEqual({ kind: 'verified', verp: { emailId, host } });

    const newAddress = rotated.address(emailId, host);
    expect(newAddress).toBe(createVerpSigner(newKey).address(emailId, host));
    expect(newAddress).not.toBe(oldAddress);
    expect(createVerpSigner(oldKey).check(newAddress, 'herald.example')).toEqual({ kind: 'forged' });
    expect(createVerpSigner(stranger).check(oldAddress, 'herald.example')).toEqual({ kind: 'forged' });
  });

  it('pagination cursors: an old-key cursor decodes, a new one is signed with the new key', () => {
    const position = { sortValue: new Date('2026-11-27T10:00:00.000Z'), id: emailId };
    const orgId = '6b06cc969013e435fbbd0000';
    const rotated = createCursorCodec(ring);
    const oldCursor = createCursorCodec(oldKey).encode('emails', orgId, position);
    expect(rotated.decode('emails', orgId, oldCursor)).toEqual(position);

    const newCursor = rotated.encode('emails', orgId, position);
    expect(newCursor).toBe(createCursorCodec(newKey).encode('emails', orgId, position));
    expect(() => createCursorCodec(oldKey).decode('emails', orgId, newCursor)).toThrow(/Invalid cursor/);
    expect(() => createCursorCodec(stranger).decode('emails', orgId, oldCursor)).toThrow(/Invalid cursor/);
    expect(() => rotated.decode('contacts', orgId, oldCursor)).toThrow(/Invalid cursor/);
  });
});
