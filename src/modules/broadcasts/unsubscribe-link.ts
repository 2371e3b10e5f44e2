import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';
import { isId } from '../../../db/ids.ts';

/**
 * Signed, expiring unsubscribe links: `<public url>/unsubscribe/<token>`, token
 * `<message id>.<expiry, unix seconds in base 36>.<HMAC-SHA256, first 16 bytes, base64url>`,
 * keyed with a key derived from HERALD_ENCRYPTION_KEY (HKDF, its own label), so every api
 * replica verifies what any worker signed and a signature made for uploads never works here.
 * The message id names the broadcast message, hence the workspace, the broadcast and the contact;
 * nothing else is trusted from the URL.
 */

/** How long a message's unsubscribe link works after it is sent. */
export const UNSUBSCRIBE_LINK_TTL_SECONDS = 60 * 24 * 3600;

const LABEL = 'herald unsubscribe link v1';
const TOKEN_PATTERN = /^([0-9a-f]{24})\.([0-9a-z]{1,8})\.([A-Za-z0-9_-]{22})$/;

export type UnsubscribeClaim = { emailId: string; expires: number };
export type CheckedToken = { ok: true; claim: UnsubscribeClaim } | { ok: false; reason: 'invalid' | 'expired' };

export function createUnsubscribeLinks(encryptionKey: Buffer, publicUrl: string) {
  const key = Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), LABEL, 32));
  const mac = (emailId: string, expires: number) => createHmac('sha256', key).update(`${emailId}\n${expires}`).digest().subarray(0, 16);

  return {
    /** The link for a message, valid for UNSUBSCRIBE_LINK_TTL_SECONDS from `now`. */
    url(emailId: string, now: Date = new Date()): string {
      const expires = Math.floor(now.getTime() / 1000) + UNSUBSCRIBE_LINK_TTL_SECONDS;
      return `${publicUrl}/unsubscribe/${emailId}.${expires.toString(36)}.${mac(emailId, expires).toString('base64url')}`;
    },

    /** Verifies a token (constant-time); an altered one is `invalid`, a genuine one past its time `expired`. */
    check(token: string, now: Date = new Date()): CheckedToken {
      const match = TOKEN_PATTERN.exec(token);
      if (!match || !isId(match[1]!)) return { ok: false, reason: 'invalid' };
      const emailId = match[1]!;
      const expires = Number.parseInt(match[2]!, 36);
      const given = Buffer.from(match[3]!, 'base64url');
      // The 22nd character carries 2 bits and 4 unused ones: only the canonical spelling is the signature.
      if (given.length !== 16 || given.toString('base64url') !== match[3]) return { ok: false, reason: 'invalid' };
      if (!timingSafeEqual(given, mac(emailId, expires))) return { ok: false, reason: 'invalid' };
      if (expires * 1000 < now.getTime()) return { ok: false, reason: 'expired' };
      return { ok: true, claim: { emailId, expires } };
    },
  };
}

export type UnsubscribeLinks = ReturnType<typeof createUnsubscribeLinks>;
