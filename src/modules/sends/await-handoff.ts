import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../errors.ts';
import { readHandoff, type HandoffResult } from './handoff.repo.ts';
import type { AcceptedEmail } from './sends.types.ts';

/** How often the opt-in hand-off wait looks at the email. */
const HANDOFF_POLL_MS = 20;

/**
 * SEND_HANDOFF_WAIT_MS > 0 (off by default): waits up to `waitMs` for the first attempt's
 * answer, so an outright rejection by the provider can be answered 502; null when it takes
 * longer (the email stays accepted and on its way).
 */
async function waitForHandoff(em: EntityManager, orgId: string, emailId: string, waitMs: number): Promise<HandoffResult | null> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const handoff = await readHandoff(em, orgId, emailId);
    if (handoff || Date.now() >= deadline) return handoff;
    await new Promise((resolve) => setTimeout(resolve, Math.min(HANDOFF_POLL_MS, deadline - Date.now())));
  }
}

/**
 * The answer to a committed send: with the opt-in wait, the first attempt's outcome, and a
 * 502 bad_gateway when the provider rejected the message outright (credits and quota are back
 * by then, so the client may retry).
 */
export async function awaitHandoff(
  options: { em: EntityManager; orgId: string; waitMs: number },
  accepted: AcceptedEmail,
): Promise<AcceptedEmail & { handoff: HandoffResult | null }> {
  const { email, recipients } = accepted;
  const { em, orgId, waitMs } = options;
  const handoff = email.scheduledAt || waitMs <= 0 ? null : await waitForHandoff(em, orgId, email.id, waitMs);
  if (handoff?.outcome === 'rejected') {
    throw new AppError(
      'bad_gateway',
      `The delivery provider rejected the message: ${handoff.response ?? 'no reason given'}. Credits and quota were released; it is safe to retry.`,
      {
        reason: 'PROVIDER_REJECTED',
        email_id: email.id,
        smtp_response: handoff.response,
      },
    );
  }
  return { email, recipients, handoff };
}
