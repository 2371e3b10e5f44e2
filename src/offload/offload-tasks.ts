import { AppError, type ErrorCode } from '../errors.ts';
import { JSON_BOUNDS } from '../http/body-limits.ts';
import { requestFingerprint } from '../canonical-json.ts';
import { parseJsonBody } from '../http/json-body.ts';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { composeMessage, type Envelope } from '../modules/outbound/message-composer.ts';
import { decodeBase64 } from '../modules/sends/sends.fns.ts';

/** The work a process can hand to its offload thread: pure functions of their input. */
export type OffloadTask =
  | { kind: 'parseJson'; bytes: Uint8Array; method: string; path: string }
  | { kind: 'decodeBase64'; text: string }
  | { kind: 'composeMessage'; message: Mail.Options; envelope: Envelope };

export type OffloadResult =
  | { kind: 'parsedJson'; value: unknown; fingerprint: string }
  | { kind: 'decodedBase64'; bytes: Uint8Array | null }
  | { kind: 'composedMessage'; bytes: Uint8Array }
  | { kind: 'appError'; code: ErrorCode; message: string; details: Record<string, unknown> | undefined };

/** Runs one task; an AppError (a refused body) is a result, anything else a crash. */
export async function runOffloadTask(task: OffloadTask): Promise<OffloadResult> {
  try {
    if (task.kind === 'composeMessage') return { kind: 'composedMessage', bytes: await composeMessage(task.message, task.envelope) };
    if (task.kind === 'decodeBase64') return { kind: 'decodedBase64', bytes: decodeBase64(task.text) };
    const value = parseJsonBody(task.bytes, JSON_BOUNDS);
    return { kind: 'parsedJson', value, fingerprint: requestFingerprint(task.method, task.path, value) };
  } catch (error) {
    if (error instanceof AppError) return { kind: 'appError', code: error.code, message: error.message, details: error.details };
    throw error;
  }
}

/** The ArrayBuffer behind `bytes` when it holds nothing else, so it can be moved instead of copied. */
export function transferableOf(bytes: Uint8Array | null): ArrayBuffer[] {
  if (bytes === null) return [];
  const buffer = bytes.buffer;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? [buffer] : [];
}
