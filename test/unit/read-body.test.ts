import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/errors.ts';
import { readFailure } from '../../src/http/middleware/read-body.ts';

/** raw-body's errors carry an HTTP status; anything else is Herald's own failure. */
function rawBodyError(status: number, type: string): Error {
  return Object.assign(new Error(type), { status, type, expose: status < 500 });
}

describe('a request body that cannot be read', () => {
  it("answers the client's side of a read (aborted, short) as a malformed body", () => {
    for (const type of ['request.aborted', 'request.size.invalid']) {
      const answer = readFailure(rawBodyError(400, type), 1024);
      expect(answer).toBeInstanceOf(AppError);
      expect((answer as AppError).code).toBe('invalid_request');
      expect((answer as AppError).details).toMatchObject({ reason: 'MALFORMED_JSON' });
    }
  });

  it('answers a body over the limit as 413 with the limit', () => {
    const answer = readFailure(rawBodyError(413, 'entity.too.large'), 2048) as AppError;
    expect(answer.code).toBe('payload_too_large');
    expect(answer.details).toMatchObject({ reason: 'REQUEST_TOO_LARGE', limit_bytes: 2048 });
  });

  it("passes Herald's own failures on unchanged instead of blaming the client's JSON", () => {
    const broken = new Error("Cannot find module 'inflation'");
    expect(readFailure(broken, 1024)).toBe(broken);
    const notReadable = rawBodyError(500, 'stream.not.readable');
    expect(readFailure(notReadable, 1024, { destroyed: false })).toBe(notReadable);
  });

  it('answers a request whose client has gone as aborted, whatever raw-body says (no 500 for a closed connection)', () => {
    const answer = readFailure(rawBodyError(500, 'stream.not.readable'), 1024, { destroyed: true });
    expect(answer).toBeInstanceOf(AppError);
    expect((answer as AppError).details).toMatchObject({ reason: 'MALFORMED_JSON' });
  });
});
