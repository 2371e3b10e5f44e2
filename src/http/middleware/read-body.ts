import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { createBrotliDecompress, createGunzip, createInflate } from 'node:zlib';
import type { Context, Middleware } from 'koa';
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
  return new AppError(
    'payload_too_large',
    `The request body is over this operation's limit of ${formatBytes(limit)} (${limit} bytes).`,
    { reason: 'REQUEST_TOO_LARGE', limit_bytes: limit },
  );
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

/** The body stream decoded per Content-Encoding (the limit counts decoded bytes: no zip bombs). */
function decodedStream(req: IncomingMessage): Readable {
  const encoding = (req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
  if (encoding === 'identity' || encoding === '') return req;
  if (encoding === 'gzip' || encoding === 'x-gzip') return req.pipe(createGunzip());
  if (encoding === 'deflate') return req.pipe(createInflate());
  if (encoding === 'br') return req.pipe(createBrotliDecompress());
  throw new AppError('invalid_request', `Unsupported Content-Encoding "${encoding}"; send identity, gzip, deflate or br.`, {
    fields: [{ path: 'Content-Encoding', location: 'header', type: 'content_encoding', message: 'must be identity, gzip, deflate or br' }],
  });
}

/**
 * Collects a stream up to `limit` bytes. Past the limit it stops collecting at once and rejects
 * with 413 (the caller discards the rest); a broken stream (aborted upload, corrupt gzip)
 * rejects with 400.
 */
function collectBytes(req: IncomingMessage, stream: Readable, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const finish = (error?: AppError) => {
      stream.off('data', onData).off('end', onEnd).off('error', onError);
      req.off('error', onError).off('close', onClose);
      if (error) {
        if (stream !== req) stream.destroy();
        reject(error);
      } else {
        resolve(Buffer.concat(chunks, size));
      }
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) finish(tooLarge(limit));
      else chunks.push(chunk);
    };
    const onEnd = () => finish();
    const onError = () => finish(new AppError('invalid_request', 'The request body could not be read (aborted or badly encoded).', { reason: 'MALFORMED_JSON' }));
    const onClose = () => (req.complete ? undefined : finish(new AppError('invalid_request', 'The request body ended early.', { reason: 'MALFORMED_JSON' })));
    stream.on('data', onData).on('end', onEnd).on('error', onError);
    if (stream !== req) req.on('error', onError);
    req.on('close', onClose);
  });
}

/**
 * Bodies larger than this are parsed (with their idempotency fingerprint) on the offload thread:
 * a 36 MiB send takes the event loop hundreds of milliseconds to parse and fingerprint, a
 * 64 KiB body well under one.
 */
const OFFLOAD_MIN_BYTES = 64 * KIB;

/** The parsed JSON body, `{}` when the request has none (or the route takes none). */
async function readJson(ctx: Context, limit: number, takesBody: boolean, offload: BodyParser | undefined): Promise<ParsedBody | { value: unknown }> {
  const kind = ctx.request.is('application/json', '+json');
  if (kind === null) return { value: {} };
  if (ctx.request.length > limit) throw tooLarge(limit);
  if (kind === false && takesBody) throw unsupportedType();
  const bytes = await collectBytes(ctx.req, decodedStream(ctx.req), limit);
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
  return async (ctx, next) => {
    try {
      const parsed = await readJson(ctx, limit, takesBody, offload);
      ctx.state.body = parsed.value;
      if ('fingerprint' in parsed) ctx.state.bodyFingerprint = parsed.fingerprint;
    } catch (error) {
      discardRest(ctx.req);
      throw error;
    }
    await next();
  };
}
