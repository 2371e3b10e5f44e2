import type { Readable } from 'node:stream';
import type * as v from 'valibot';
import type { ErrorCode } from '../errors.ts';
import type { KeyContext } from '../modules/auth/key-context.ts';
import type { Pagination } from './envelope.ts';
import type { FieldProblem } from '../validation.ts';
import type { IdempotentAnswer, StoredResponse } from '../modules/idempotency/idempotency.types.ts';

export type HttpMethod = 'GET' | 'POST' | 'PATCH' | 'DELETE';
export type Schema = v.GenericSchema | v.GenericSchemaAsync;
type Output<S> = S extends Schema ? v.InferOutput<S> : undefined;

export interface RouteInput<P, Q, B> {
  caller: KeyContext;
  params: P;
  query: Q;
  body: B;
  requestId: string;
  /**
   * Present on a write that claimed an Idempotency-Key: lets the handler store its idempotent
   * answer inside its own transaction, so the answer commits with the change it describes.
   * A handler that uses it must then answer exactly that.
   */
  idempotentAnswer?: IdempotentAnswer;
  /** The request's Idempotency-Key, when it claimed one (for a handler that keeps per-item answers under it). */
  idempotencyKey?: string;
}

/** A JSON answer, sent inside the success envelope `{ok: true, data, meta}`. */
export interface JsonRouteResult {
  status: number;
  data: unknown;
  pagination?: Pagination;
}

/**
 * Raw bytes instead of the envelope (downloads): the stream is piped as the body with these
 * headers (Content-Type, Content-Length, Content-Disposition, …). Only for GET routes whose
 * `response.binary` documents it.
 */
export interface StreamRouteResult {
  status: number;
  stream: Readable;
  headers: Record<string, string>;
}

export type RouteResult = JsonRouteResult | StreamRouteResult;

/** The documented success response: a JSON schema inside the envelope, or raw bytes. */
export type RouteResponse =
  | { status: number; description: string; schema: Schema; list?: boolean; binary?: undefined }
  | {
      status: number;
      description: string;
      /** Raw bytes (a StreamRouteResult): the media type and the headers that describe them. */
      binary: { contentType: string; headers: Record<string, string> };
      schema?: undefined;
      list?: undefined;
    };

/**
 * One operation of the public API: its contract (method, path, scope, schemas, errors) and
 * its handler. The same definition mounts the Koa route, documents it in OpenAPI and enrols
 * it in the shared auth/tenancy test suite, so the three cannot drift apart.
 */
export interface RouteDefinition<
  P extends Schema | undefined = Schema | undefined,
  Q extends Schema | undefined = Schema | undefined,
  B extends Schema | undefined = Schema | undefined,
> {
  operationId: string;
  method: HttpMethod;
  /** Koa-style path below /api/v1, e.g. `/contacts/:id`. */
  path: string;
  summary: string;
  description?: string;
  tag: string;
  scope: string;
  /** Writes require an Idempotency-Key unless marked optional (spec, Endpoints detail 4). */
  idempotency?: 'required' | 'optional';
  /**
   * The handler claims the Idempotency-Key in the first statement of its own transaction
   * (`idempotentAnswer.claim`) instead of the middleware claiming it beforehand: one commit and
   * one round trip less on a hot write, and a concurrent duplicate waits for the first's commit.
   */
  claimInTransaction?: boolean;
  params?: P;
  query?: Q;
  body?: B;
  /**
   * Largest request body in bytes, counted while reading (413 REQUEST_TOO_LARGE past it).
   * Default: 1 MiB with a body schema, 1 KiB without (see `bodyLimitOf`). Derive a route's
   * own from its schema's bounds.
   */
  bodyLimit?: number;
  /** For a body that fails validation: the `details.reason` the operation documents for those fields. */
  bodyErrorReason?: (fields: FieldProblem[]) => string | undefined;
  response: RouteResponse;
  /** Error codes this operation can answer besides the common ones (401, 403, 429, 500). */
  errors?: ErrorCode[];
  /** Herald's addition beyond the spec, marked `x-herald-extension` in OpenAPI. */
  extension?: boolean;
  /** For a response holding a one-time secret: store it sealed for idempotent replays. */
  storedResponse?: StoredResponse;
  handle(input: RouteInput<Output<P>, Output<Q>, Output<B>>): Promise<RouteResult>;
}

export type AnyRoute = RouteDefinition<Schema | undefined, Schema | undefined, Schema | undefined>;

export function defineRoute<
  P extends Schema | undefined = undefined,
  Q extends Schema | undefined = undefined,
  B extends Schema | undefined = undefined,
>(route: RouteDefinition<P, Q, B>): AnyRoute {
  return route;
}

export function isWrite(route: Pick<AnyRoute, 'method'>): boolean {
  return route.method !== 'GET';
}
