import type { CursorCodec } from '../../http/cursor.ts';
import type { BatchSender } from './batch.ts';
import { emailRecordRoutes } from './email-records.routes.ts';
import { sendAcceptanceRoutes } from './send-acceptance.routes.ts';
import type { SendsService } from './sends.service.ts';

/**
 * POST /outbox/emails (spec), GET /outbox/emails/{id} and POST /outbox/emails/{id}/cancel
 * (Herald extensions). 202 means accepted for delivery: outcomes arrive as email.* webhook
 * events and on the record's recipients. For an immediate send the API waits briefly for the
 * hand-off to the relay, so an outright rejection by the provider is a 502 (credits and quota
 * released; safe to retry).
 */
export function createSendsRoutes(deps: { sends: SendsService; batch: BatchSender; cursors: CursorCodec }) {
  return [...sendAcceptanceRoutes(deps), ...emailRecordRoutes(deps)];
}
