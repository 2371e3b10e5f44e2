import { AppError } from '../errors.ts';
import type { JsonBounds } from './body-limits.ts';
import { findShapeProblem } from './json-shape.ts';

function malformed(message: string): AppError {
  return new AppError('invalid_request', message, { reason: 'MALFORMED_JSON' });
}

/** UTF-8 text of a body; anything else (JSON is UTF-8, RFC 8259 §8.1) is malformed. */
function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw malformed('The request body is not valid UTF-8.');
  }
}

/**
 * The value of a JSON request body: UTF-8 decoded strictly, its shape checked against the
 * bounds before parsing (400 JSON_TOO_DEEP / JSON_TOO_MANY_KEYS / JSON_TOO_MANY_ITEMS), then
 * parsed (400 MALFORMED_JSON). An empty body is `{}`.
 */
export function parseJsonBody(bytes: Uint8Array, bounds: JsonBounds): unknown {
  const text = decodeUtf8(bytes);
  if (text.trim() === '') return {};
  const problem = findShapeProblem(text, bounds);
  if (problem) throw new AppError('invalid_request', problem.message, { reason: problem.reason, limit: problem.limit });
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw malformed('The request body is not valid JSON.');
  }
}
