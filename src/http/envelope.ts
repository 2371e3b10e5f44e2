import type { Context } from 'koa';
import type { HeraldState } from './state.ts';

export interface Pagination {
  limit: number;
  has_more: boolean;
  next_cursor: string | null;
}

/** Writes the success envelope `{ok: true, data, meta}`. */
export function respond(
  ctx: Context & { state: HeraldState },
  status: number,
  data: unknown,
  extraMeta: Record<string, unknown> = {},
): void {
  ctx.status = status;
  ctx.body = {
    ok: true,
    data,
    meta: {
      request_id: ctx.state.requestId,
      ...(ctx.state.rateLimit ? { rate_limit: ctx.state.rateLimit } : {}),
      ...extraMeta,
    },
  };
}
