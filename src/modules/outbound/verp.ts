import { createHmac } from 'node:crypto';
import { deriveSigningKeys, matchesAny, type KeyRing } from '../../crypto/signing-keys.ts';

/**
 * Signed VERP return paths. Every message Herald sends carries the envelope sender
 * `bounce+<emailId>-<tag>@bounces.<sending domain>`, where `<tag>` is the first 10 bytes of
 * HMAC-SHA256 over the email id and the bounce host, hex, under a key derived from
 * HERALD_ENCRYPTION_KEY (HKDF, its own label; the newest key of the ring signs, any verifies). An email id is not a secret (it is in the
 * Message-ID every recipient sees, and ids are time-ordered), so only the tag proves that a
 * delivery report answers a message Herald really sent: inbound SMTP refuses a bounce address
 * whose tag does not verify, and only a verified address lets a report change delivery state.
 * Hex because some MTAs fold the case of local parts; 80 bits because a guess costs an SMTP
 * transaction and a refused RCPT is counted.
 */

const LABEL = 'herald verp return path v1';
const TAG_BYTES = 10;
const LOCAL_PART = /^bounce\+([0-9a-f]{24})-([0-9a-f]{20})$/;

export interface VerifiedVerp {
  emailId: string;
  /** The host the address was sent to, lower-cased: `bounces.<sending domain>`. */
  host: string;
}

export type VerpCheck =
  | { kind: 'verified'; verp: VerifiedVerp }
  /** A bounce address of Herald's form whose tag is missing or wrong (legacy or forged). */
  | { kind: 'forged' }
  /** Not a bounce address at all. */
  | { kind: 'other' };

/** Whether a recipient's host is one Herald's bounce addresses use (the `bounces.` host of a domain, or BOUNCE_DOMAIN). */
export function isBounceHost(host: string, bounceDomain: string): boolean {
  const lower = host.toLowerCase();
  return lower.startsWith('bounces.') || lower === bounceDomain.toLowerCase();
}

export function createVerpSigner(encryptionKeys: KeyRing) {
  const keys = deriveSigningKeys(encryptionKeys, LABEL);
  const tagUnder = (key: Buffer, emailId: string, host: string) =>
    createHmac('sha256', key).update(`${emailId}\n${host}`).digest().subarray(0, TAG_BYTES);
  const tag = (emailId: string, host: string) => tagUnder(keys.signing, emailId, host);

  return {
    /** The signed return path of an email sent from `bounceHost` (`bounces.<sending domain>`). */
    address(emailId: string, bounceHost: string): string {
      const host = bounceHost.toLowerCase();
      return `bounce+${emailId}-${tag(emailId, host).toString('hex')}@${host}`;
    },

    /**
     * Checks a recipient address: `verified` (the tag matches the email id and host), `forged`
     * (Herald's bounce form on a bounce host without a valid tag: the legacy unsigned form
     * included) or `other`.
     */
    check(address: string, bounceDomain: string): VerpCheck {
      const at = address.lastIndexOf('@');
      if (at < 0) return { kind: 'other' };
      const host = address.slice(at + 1).toLowerCase();
      const local = address.slice(0, at).toLowerCase();
      if (!isBounceHost(host, bounceDomain)) return { kind: 'other' };
      if (!local.startsWith('bounce+')) return { kind: 'other' };
      const match = LOCAL_PART.exec(local);
      if (!match) return { kind: 'forged' };
      const given = Buffer.from(match[2]!, 'hex');
      if (!matchesAny(keys, given, (key) => tagUnder(key, match[1]!, host))) return { kind: 'forged' };
      return { kind: 'verified', verp: { emailId: match[1]!, host } };
    },
  };
}

export type VerpSigner = ReturnType<typeof createVerpSigner>;
