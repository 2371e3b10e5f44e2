import { createHmac } from 'node:crypto';
import { deriveSigningKeys, matchesAny, type KeyRing } from '../../crypto/signing-keys.ts';
import { AppError } from '../../errors.ts';

/**
 * Herald's signed upload URLs: `<public url>/uploads/<attachment_id>?expires=<unix>&sig=<hex>`
 * (`/uploads/contact-imports/<import id>` for a contact import's file),
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

/** What an upload URL uploads: each has its own key (HKDF label) and path under /uploads. */
export type UploadPurpose = 'attachment' | 'contact-import';
const PURPOSES: Record<UploadPurpose, { label: string; path: string }> = {
  attachment: { label: 'herald upload url v1', path: '/uploads' },
  'contact-import': { label: 'herald contact import upload url v1', path: '/uploads/contact-imports' },
};
const SIGNATURE_PATTERN = /^[0-9a-f]{64}$/;

function payload(claim: UploadClaim): string {
  return `${claim.attachmentId}\n${claim.contentType}\n${claim.sizeBytes}\n${claim.expires}`;
}

/**
 * A signer whose key is derived from the 32-byte HERALD_ENCRYPTION_KEY, one per purpose, so a
 * signature for one kind of upload never works for another. Given the key ring, the newest key
 * signs and any key of it verifies (URLs handed out before a key rotation keep working).
 */
export function createUploadUrlSigner(encryptionKeys: KeyRing, publicUrl: string, purpose: UploadPurpose = 'attachment'): UploadUrlSigner {
  const { label, path } = PURPOSES[purpose];
  const keys = deriveSigningKeys(encryptionKeys, label);
  const macUnder = (key: Buffer, claim: UploadClaim) => createHmac('sha256', key).update(payload(claim)).digest();
  const mac = (claim: UploadClaim) => macUnder(keys.signing, claim);

  return {
    sign: (claim) => mac(claim).toString('hex'),
    verify(claim, signature) {
      if (!SIGNATURE_PATTERN.test(signature)) return false;
      return matchesAny(keys, Buffer.from(signature, 'hex'), (key) => macUnder(key, claim));
    },
    url(claim) {
      const query = new URLSearchParams({ expires: String(claim.expires), sig: mac(claim).toString('hex') });
      return `${publicUrl}${path}/${claim.attachmentId}?${query.toString()}`;
    },
  };
}

/** The `expires` of an upload URL as unix seconds, or null when it is not a plain number. */
export function parseUploadExpiry(value: string | undefined): number | null {
  return /^\d{1,12}$/.test(value ?? '') ? Number(value) : null;
}

/** 403 INVALID_SIGNATURE: the URL was altered or names nothing; `createdBy` is the operation that hands out good ones. */
export function invalidUploadSignature(createdBy: string): AppError {
  return new AppError('forbidden', `The upload URL is not valid: use upload_url exactly as ${createdBy} returned it.`, {
    reason: 'INVALID_SIGNATURE',
  });
}

const CLIENT_ABORT_CODES = new Set(['ECONNRESET', 'ERR_STREAM_PREMATURE_CLOSE']);

/** Whether storing an upload failed because the client went away mid-body. */
export function isClientAbort(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && CLIENT_ABORT_CODES.has(code);
}
