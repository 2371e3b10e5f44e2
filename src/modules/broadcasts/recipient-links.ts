import { createHmac } from 'node:crypto';
import { isId } from '../../../db/ids.ts';
import { deriveSigningKeys, matchesAny, type KeyRing, type SigningKeys } from '../../crypto/signing-keys.ts';

/**
 * The signed links in a message, on Herald's public URL (tracking ones on the sending domain's
 * verified tracking host when it has one; the MAC does not cover the host), each kind keyed with its
 * own key derived from HERALD_ENCRYPTION_KEY (HKDF, one label per kind), so every api replica
 * verifies what any worker signed and a signature never works for another kind or for uploads.
 * Given the key ring, the newest key signs and any key of it verifies (src/crypto/signing-keys.ts):
 * - unsubscribe `/unsubscribe/<message id>.<expiry, base 36>.<mac>`, working for 60 days;
 * - open pixel `/t/o/<message id>.<mac>.gif`;
 * - tracked link `/t/c/<message id>.<mac>?u=<target>`, the MAC over the message id and the exact
 *   target, so a link cannot be turned into a redirect anywhere else (no open redirect).
 * `<mac>` is the first 16 bytes of HMAC-SHA256, base64url; only its canonical spelling verifies.
 * The message id names the broadcast message, hence the workspace, broadcast and contact.
 */

/** How long a message's unsubscribe link works after it is sent. */
export const UNSUBSCRIBE_LINK_TTL_SECONDS = 60 * 24 * 3600;

const LABELS = {
  unsubscribe: 'herald unsubscribe link v1',
  open: 'herald open pixel v1',
  click: 'herald tracked link v1',
} as const;
type LinkKind = keyof typeof LABELS;

const MAC = '([A-Za-z0-9_-]{22})';
const MESSAGE_ID = '([0-9a-f]{24})';
const UNSUBSCRIBE_TOKEN = new RegExp(`^${MESSAGE_ID}\\.([0-9a-z]{1,8})\\.${MAC}$`);
const TRACKING_TOKEN = new RegExp(`^${MESSAGE_ID}\\.${MAC}$`);

export type UnsubscribeClaim = { emailId: string; expires: number };
export type CheckedToken = { ok: true; claim: UnsubscribeClaim } | { ok: false; reason: 'invalid' | 'expired' };

export function createRecipientLinks(encryptionKeys: KeyRing, publicUrl: string) {
  const keys = Object.fromEntries(
    Object.entries(LABELS).map(([kind, label]) => [kind, deriveSigningKeys(encryptionKeys, label)]),
  ) as Record<LinkKind, SigningKeys>;
  const macUnder = (key: Buffer, parts: string[]) => createHmac('sha256', key).update(parts.join('\n')).digest().subarray(0, 16);
  const mac = (kind: LinkKind, ...parts: string[]) => macUnder(keys[kind].signing, parts);
  /** Constant-time check of a base64url MAC under any key of the ring; a non-canonical spelling (the last character's unused bits) is refused. */
  const verify = (given: string, kind: LinkKind, ...parts: string[]) => {
    const bytes = Buffer.from(given, 'base64url');
    return bytes.length === 16 && bytes.toString('base64url') === given && matchesAny(keys[kind], bytes, (key) => macUnder(key, parts));
  };

  return {
    /** The unsubscribe link of a message, valid for UNSUBSCRIBE_LINK_TTL_SECONDS from `now`. */
    url(emailId: string, now: Date = new Date()): string {
      const expires = Math.floor(now.getTime() / 1000) + UNSUBSCRIBE_LINK_TTL_SECONDS;
      return `${publicUrl}/unsubscribe/${emailId}.${expires.toString(36)}.${mac('unsubscribe', emailId, String(expires)).toString('base64url')}`;
    },

    /** Verifies an unsubscribe token: an altered one is `invalid`, a genuine one past its time `expired`. */
    check(token: string, now: Date = new Date()): CheckedToken {
      const match = UNSUBSCRIBE_TOKEN.exec(token);
      if (!match || !isId(match[1]!)) return { ok: false, reason: 'invalid' };
      const emailId = match[1]!;
      const expires = Number.parseInt(match[2]!, 36);
      if (!verify(match[3]!, 'unsubscribe', emailId, String(expires))) return { ok: false, reason: 'invalid' };
      if (expires * 1000 < now.getTime()) return { ok: false, reason: 'expired' };
      return { ok: true, claim: { emailId, expires } };
    },

    /** The open pixel's URL, on `base` (a verified tracking host, trackingBase) or PUBLIC_URL. */
    openUrl(emailId: string, base: string = publicUrl): string {
      return `${base}/t/o/${emailId}.${mac('open', emailId).toString('base64url')}.gif`;
    },

    /** The message id of an open pixel's token (`<id>.<mac>`, without `.gif`), or null. */
    checkOpen(token: string): string | null {
      const match = TRACKING_TOKEN.exec(token);
      return match && verify(match[2]!, 'open', match[1]!) ? match[1]! : null;
    },

    /** A tracked link's URL, on `base` (a verified tracking host, trackingBase) or PUBLIC_URL. */
    clickUrl(emailId: string, target: string, base: string = publicUrl): string {
      return `${base}/t/c/${emailId}.${mac('click', emailId, target).toString('base64url')}?u=${encodeURIComponent(target)}`;
    },

    /** The message id when `token` signs exactly `target` for it, or null. */
    checkClick(token: string, target: string): string | null {
      const match = TRACKING_TOKEN.exec(token);
      return match && verify(match[2]!, 'click', match[1]!, target) ? match[1]! : null;
    },
  };
}

export type RecipientLinks = ReturnType<typeof createRecipientLinks>;
