import { randomBytes } from 'node:crypto';

/**
 * 24-hex, time-ordered ids in the ObjectId layout: 4 bytes of Unix seconds, 5 bytes of
 * per-process randomness, 3 bytes of counter. Ids sort by creation second, so keyset
 * pagination on `id` follows creation order, and every resource shares the inbox id pattern.
 */
const processRandom = randomBytes(5).toString('hex');
let counter = randomBytes(3).readUIntBE(0, 3);

export const ID_PATTERN = /^[a-fA-F0-9]{24}$/;

export function newId(now: Date = new Date()): string {
  counter = (counter + 1) % 0x1000000;
  const seconds = Math.floor(now.getTime() / 1000);
  return seconds.toString(16).padStart(8, '0') + processRandom + counter.toString(16).padStart(6, '0');
}

export function isId(value: string): boolean {
  return ID_PATTERN.test(value);
}

/** The creation second encoded in an id. */
export function idTimestamp(id: string): Date {
  return new Date(Number.parseInt(id.slice(0, 8), 16) * 1000);
}
