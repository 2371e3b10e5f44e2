import Router from '@koa/router';
import { respond } from '../../http/envelope.ts';
import { requireScope } from '../../http/middleware/require-scope.ts';
import { callerOf, type HeraldState } from '../../http/state.ts';
import { serializeKeyContext } from './me.serializer.ts';

/** GET /api/v1/me (me:read): the identity and limits of the calling key. */
export function createMeRouter(): Router<HeraldState> {
  const router = new Router<HeraldState>();
  router.get('/me', requireScope('me:read'), (ctx) => {
    respond(ctx, 200, serializeKeyContext(callerOf(ctx.state)));
  });
  return router;
}
