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

const ENVELOPE_HEAD = '{"ok":true,"data":';
const ENVELOPE_META = ',"meta":';

/**
 * `{"ok":true,"data":<data>,"meta":<meta>}` as bytes, each part encoded straight into one
 * buffer: a string body (a page is ~25 KB) would be flattened into a new string (the template's
 * concatenation) and copied again when Node prepends the headers, before being encoded for the
 * socket; this encodes the page's text once and allocates nothing else of its size.
 */
export function jsonTextEnvelope(data: string, meta: string): Buffer {
  const dataBytes = Buffer.byteLength(data);
  const metaBytes = Buffer.byteLength(meta);
  const out = Buffer.allocUnsafe(ENVELOPE_HEAD.length + dataBytes + ENVELOPE_META.length + metaBytes + 1);
  let at = out.write(ENVELOPE_HEAD, 0, 'latin1');
  at += out.write(data, at, 'utf8');
  at += out.write(ENVELOPE_META, at, 'latin1');
  at += out.write(meta, at, 'utf8');
  out[at] = 0x7d;
  return out;
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
    ctx.body = jsonTextEnvelope(data.text, JSON.stringify(envelope.meta));
    return;
  }
  ctx.body = envelope;
}
