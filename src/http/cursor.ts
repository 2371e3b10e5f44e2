import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { KeysetPosition } from '../../db/keyset.ts';
import { deriveSigningKeys, matchesAny, ringOf, type KeyRing, type SigningKeys } from '../crypto/signing-keys.ts';
import { AppError } from '../errors.ts';

/**
 * Opaque, tamper-evident pagination cursors: base64url JSON of the last row's position plus an
 * HMAC over it, the list it belongs to and the workspace. A cursor edited by hand, taken from
 * another list, or from another workspace is refused with 400 invalid_request.
 */
export interface CursorCodec {
  encode(list: string, orgId: string, position: KeysetPosition): string;
  decode(list: string, orgId: string, cursor: string): KeysetPosition;
}

const TAG_BYTES = 16;

/** The form of `KeysetPosition.sortText`: a UTC timestamp with up to microseconds. */
const PRECISE_TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$/;

function badCursor(): AppError {
  return new AppError('invalid_request', 'Invalid cursor: use next_cursor from a previous page of the same list.', {
    fields: [{ path: 'cursor', location: 'query', type: 'cursor', message: 'invalid cursor' }],
  });
}

/**
 * Derived from HERALD_ENCRYPTION_KEY so every replica agrees (the newest key of the ring signs,
 * any verifies); random when none is configured.
 */
export function createCursorCodec(encryptionKeys: KeyRing | undefined): CursorCodec {
  const random = randomBytes(32);
  const keys: SigningKeys =
    encryptionKeys && ringOf(encryptionKeys).length > 0
      ? deriveSigningKeys(encryptionKeys, 'herald pagination cursor v1')
      : { signing: random, verifying: [random] };
  // KeyObjects made once: an HMAC keyed with a Buffer imports the key again on every call.
  const secrets = new Map<Buffer, KeyObject>(keys.verifying.map((key) => [key, createSecretKey(key)]));
  const tagUnder = (key: Buffer, list: string, orgId: string, payload: string) =>
    createHmac('sha256', secrets.get(key)!).update(`${list}\n${orgId}\n${payload}`).digest().subarray(0, TAG_BYTES);
  const tag = (list: string, orgId: string, payload: string) => tagUnder(keys.signing, list, orgId, payload);

  return {
    encode(list, orgId, position) {
      const fields = [position.sortValue.toISOString(), position.id];
      if (position.sortText !== undefined) fields.push(position.sortText);
      const payload = Buffer.from(JSON.stringify(fields)).toString('base64url');
      return `${payload}.${tag(list, orgId, payload).toString('base64url')}`;
    },
    decode(list, orgId, cursor) {
      const [payload, signature, extra] = cursor.split('.');
      if (!payload || !signature || extra !== undefined) throw badCursor();
      const presented = Buffer.from(signature, 'base64url');
      if (!matchesAny(keys, presented, (key) => tagUnder(key, list, orgId, payload))) throw badCursor();
      try {
        const [sortValue, id, sortText] = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as [string, string, unknown];
        const date = new Date(sortValue);
        if (Number.isNaN(date.getTime()) || typeof id !== 'string') throw badCursor();
        if (sortText === undefined) return { sortValue: date, id };
        if (typeof sortText !== 'string' || !PRECISE_TIMESTAMP.test(sortText)) throw badCursor();
        return { sortValue: date, id, sortText };
      } catch {
        throw badCursor();
      }
    },
  };
}
