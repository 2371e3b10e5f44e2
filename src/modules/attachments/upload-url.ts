import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto';

/**
 * Herald's signed upload URLs: `<public url>/uploads/<attachment_id>?expires=<unix>&sig=<hex>`,
 * where `sig` is HMAC-SHA256 over the attachment id, content type, size and expiry (ARCHITECTURE
 * §8) with a key derived from HERALD_ENCRYPTION_KEY (HKDF, its own label), so every api replica
 * signs and verifies alike and the URL is bound to exactly one content type and byte length.
 */
export interface UploadClaim {
  attachmentId: string;
  contentType: string;
  sizeBytes: number;
  /** Unix seconds after which the URL no longer works. */
  expires: number;
}

export interface UploadUrlSigner {
  /** Hex HMAC of a claim. */
  sign(claim: UploadClaim): string;
  /** Whether `signature` is the claim's (constant-time; a malformed signature is simply false). */
  verify(claim: UploadClaim, signature: string): boolean;
  /** The full upload URL for a claim. */
  url(claim: UploadClaim): string;
}

const LABEL = 'herald upload url v1';
const SIGNATURE_PATTERN = /^[0-9a-f]{64}$/;

function payload(claim: UploadClaim): string {
  return `${claim.attachmentId}\n${claim.contentType}\n${claim.sizeBytes}\n${claim.expires}`;
}

/** A signer whose key is derived from the 32-byte HERALD_ENCRYPTION_KEY. */
export function createUploadUrlSigner(encryptionKey: Buffer, publicUrl: string): UploadUrlSigner {
  const key = Buffer.from(hkdfSync('sha256', encryptionKey, Buffer.alloc(0), LABEL, 32));
  const mac = (claim: UploadClaim) => createHmac('sha256', key).update(payload(claim)).digest();

  return {
    sign: (claim) => mac(claim).toString('hex'),
    verify(claim, signature) {
      if (!SIGNATURE_PATTERN.test(signature)) return false;
      return timingSafeEqual(mac(claim), Buffer.from(signature, 'hex'));
    },
    url(claim) {
      const query = new URLSearchParams({ expires: String(claim.expires), sig: mac(claim).toString('hex') });
      return `${publicUrl}/uploads/${claim.attachmentId}?${query.toString()}`;
    },
  };
}
