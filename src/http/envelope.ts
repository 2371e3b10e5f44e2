import type { Context } from 'koa';
import type { HeraldState } from './state.ts';

export interface Pagination {
  limit: number;
  has_more: boolean;
  next_cursor: string | null;
}

/** The success envelope `{ok: true, data, meta}` of this request. */
export function successEnvelope(state: HeraldState, data: unknown, extraMeta: Record<string, unknown> = {}) {
  return {
    ok: true as const,
    data,
    meta: {
      request_id: state.requestId,
      ...(state.rateLimit ? { rate_limit: state.rateLimit } : {}),
      ...extraMeta,
    },
  };
}

/**
 * Data that is already JSON text (a list page PostgreSQL built): the envelope carries it as
 * is instead of parsing and serializing it again.
 */
export class JsonText {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** Writes the success envelope `{ok: true, data, meta}`. */
export function respond(
  ctx: Context & { state: HeraldState },
  status: number,
  data: unknown,
  extraMeta: Record<string, unknown> = {},
): void {
  ctx.status = status;
  const envelope = successEnvelope(ctx.state, data, extraMeta);
  if (data instanceof JsonText) {
    ctx.type = 'application/json';
    // As bytes: a string body (a page is ~25 KB) would be copied flat once to count its length
    // and again when Node prepends the headers to it, before being encoded for the socket.
    ctx.body = Buffer.from(`{"ok":true,"data":${data.text},"meta":${JSON.stringify(envelope.meta)}}`);
    return;
  }
  ctx.body = envelope;
}
