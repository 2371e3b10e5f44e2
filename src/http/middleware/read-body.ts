import type { IncomingMessage } from 'node:http';
import type { Context, Middleware } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { AppError } from '../../errors.ts';
import type { OffloadPool, ParsedBody } from '../../offload/offload-pool.ts';
import { JSON_BOUNDS, KIB, MIB, bodyLimitOf, formatBytes } from '../body-limits.ts';
import { parseJsonBody } from '../json-body.ts';
import type { AnyRoute } from '../route.ts';
import type { HeraldState } from '../state.ts';

/**
 * Bytes of a refused request still discarded (not buffered, not parsed) so the client can read
 * the answer before the connection is reused; past this the socket is destroyed. Closing at once
 * instead would reset the connection under a client still writing, often losing the answer.
 */
const DISCARD_CAP_BYTES = 64 * MIB;

function tooLarge(limit: number): AppError {
  return new AppError('payload_too_large', `The request body is over this operation's limit of ${formatBytes(limit)} (${limit} bytes).`, {
    reason: 'REQUEST_TOO_LARGE',
    limit_bytes: limit,
  });
}

/** Lets the rest of a refused body flow into nothing, up to DISCARD_CAP_BYTES. */
function discardRest(req: IncomingMessage): void {
  if (req.complete || req.destroyed) return;
  let discarded = 0;
  req.unpipe();
  req.on('data', (chunk: Buffer) => {
    discarded += chunk.length;
    if (discarded > DISCARD_CAP_BYTES) req.destroy();
  });
  req.resume();
}

function unsupportedType(): AppError {
  return new AppError('invalid_request', 'The request body must be JSON (Content-Type: application/json).', {
    reason: 'UNSUPPORTED_CONTENT_TYPE',
    fields: [{ path: 'Content-Type', location: 'header', type: 'content_type', message: 'must be application/json' }],
  });
}

/**
 * What co-body (under koa-body) raises while reading, in Herald's envelope. Only the client's
 * side of a read (a 4xx from raw-body: aborted, short, badly encoded; or any failure once the
 * client has gone, such as raw-body's 500 "stream is not readable" for a request whose
 * connection closed while it waited its turn) is the client's error; any other failure is
 * Herald's own and goes on as it is, to be answered as an internal error.
 */
export function readFailure(error: unknown, limit: number, req?: Pick<IncomingMessage, 'destroyed'>): unknown {
  const status = (error as { status?: unknown }).status;
  if (status === 413) return tooLarge(limit);
  if (status === 415) {
    return new AppError('invalid_request', 'Unsupported Content-Encoding; send identity, gzip, deflate or br.', {
      fields: [
        { path: 'Content-Encoding', location: 'header', type: 'content_encoding', message: 'must be identity, gzip, deflate or br' },
      ],
    });
  }
  const clientsSide = typeof status === 'number' && status >= 400 && status < 500;
  if (!clientsSide && req?.destroyed !== true) return error;
  return new AppError('invalid_request', 'The request body could not be read (aborted, ended early or badly encoded).', {
    reason: 'MALFORMED_JSON',
  });
}

/**
 * koa-body reads the body as text within the route's limit: raw-body stops at the limit (413,
 * counted after gzip/deflate/br decoding by inflation, so no zip bombs) or at once when
 * Content-Length is over it. Decoded as latin1, one character per byte, so the exact bytes
 * come back (JSON is checked as UTF-8 by parseJsonBody, which refuses invalid sequences
 * instead of replacing them).
 */
function createBodyReader(limit: number): Middleware {
  return koaBody({
    json: false,
    urlencoded: false,
    multipart: false,
    text: true,
    textTypes: ['application/json', '+json'],
    textLimit: limit,
    encoding: 'latin1',
    parsedMethods: Object.values(HttpMethodEnum),
    onError: (error, ctx) => {
      throw readFailure(error, limit, ctx.req);
    },
  });
}

async function readBytes(ctx: Context, reader: Middleware): Promise<Buffer> {
  await reader(ctx, () => Promise.resolve());
  const text: unknown = ctx.request.body;
  return typeof text === 'string' ? Buffer.from(text, 'latin1') : Buffer.alloc(0);
}

/**
 * Bodies larger than this are parsed (with their idempotency fingerprint) on the offload thread:
 * a 36 MiB send takes the event loop hundreds of milliseconds to parse and fingerprint, a
 * 64 KiB body well under one.
 */
const OFFLOAD_MIN_BYTES = 64 * KIB;

/** The parsed JSON body, `{}` when the request has none (or the route takes none). */
async function readJson(
  ctx: Context,
  limit: number,
  reader: Middleware,
  takesBody: boolean,
  offload: BodyParser | undefined,
): Promise<ParsedBody | { value: unknown }> {
  const kind = ctx.request.is('application/json', '+json');
  if (kind === null) return { value: {} };
  if (ctx.request.length > limit) throw tooLarge(limit);
  if (kind === false) {
    if (takesBody) throw unsupportedType();
    return { value: {} };
  }
  const bytes = await readBytes(ctx, reader);
  if (!takesBody) return { value: {} };
  if (offload && bytes.length > OFFLOAD_MIN_BYTES) return offload.parseJson(bytes, ctx.method, ctx.path);
  return { value: parseJsonBody(bytes, JSON_BOUNDS) };
}

type BodyParser = Pick<OffloadPool, 'parseJson'>;

/**
 * Reads a route's request body before anything looks at it: refused with 413 REQUEST_TOO_LARGE
 * as soon as the declared length or the bytes read pass the route's limit (`bodyLimitOf`),
 * then shape-checked and parsed (`parseJsonBody`) into `ctx.state.body`, on the offload thread
 * when it is large. A route without a body schema has its body read within its (small) limit
 * and ignored.
 */
export function readBody(route: Pick<AnyRoute, 'body' | 'bodyLimit'>, offload?: BodyParser): Middleware<HeraldState> {
  const limit = bodyLimitOf(route);
  const takesBody = route.body !== undefined;
  const reader = createBodyReader(limit);
  return async (ctx, next) => {
    try {
      const parsed = await readJson(ctx, limit, reader, takesBody, offload);
      ctx.state.body = parsed.value;
      if ('fingerprint' in parsed) ctx.state.bodyFingerprint = parsed.fingerprint;
    } catch (error) {
      discardRest(ctx.req);
      throw error;
    }
    await next();
  };
}
