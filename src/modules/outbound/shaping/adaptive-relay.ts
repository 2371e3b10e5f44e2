import type { AdaptiveGate, ShapingOutcome } from './adaptive-limit.ts';

/** The parts of a RelayResult (relay.ts) that say how a transaction went; structural, so relay.ts can use this file. */
export type TransactionAnswer =
  | { kind: 'unreachable' }
  | { kind: 'message_refused'; permanent: boolean; code?: number | null }
  | { kind: 'recipients'; recipients: readonly { accepted: boolean; code: number | null }[] };

/** 421: the server is closing the channel (too many connections, rate limited, going down). */
const SERVICE_NOT_AVAILABLE = 421;

/**
 * What a transaction says about the receiver's capacity, read the way MTAs read it:
 * - any final answer (accepted, or a permanent refusal, which is about the message, not the
 *   load) counts as taken;
 * - no answer at all (connection refused or timed out), a 421 anywhere, or a temporary refusal of
 *   the message itself (at MAIL FROM or DATA: a rate limiter's answer) counts as refused for now;
 * - temporary refusals of recipients alone (450/451/452 at RCPT: greylisting, a full mailbox) say
 *   nothing about the destination's load and change nothing, like Postfix, which keeps such
 *   recipients in its queue without marking the site dead.
 */
export function shapingOutcomeOf(result: TransactionAnswer): ShapingOutcome {
  if (result.kind === 'unreachable') return 'temporary';
  if (result.kind === 'message_refused') return result.permanent ? 'accepted' : 'temporary';
  if (result.recipients.length === 0 || result.recipients.some((r) => r.accepted || (r.code ?? 0) >= 500)) return 'accepted';
  // No code: no server answered for them (connection refused, timed out, TLS failed).
  return result.recipients.some((r) => r.code === SERVICE_NOT_AVAILABLE || r.code === null) ? 'temporary' : 'ignored';
}

interface Sender<TMessage, TEnvelope, TResult> {
  send(message: TMessage, envelope: TEnvelope): Promise<TResult>;
  close(): void;
}

/** `relay` with at most the gate's limit of transactions in flight, the limit moving with the answers. */
export function withAdaptiveConnections<TMessage, TEnvelope, TResult extends TransactionAnswer>(
  relay: Sender<TMessage, TEnvelope, TResult>,
  gate: AdaptiveGate,
): Sender<TMessage, TEnvelope, TResult> {
  return {
    async send(message, envelope) {
      const release = await gate.acquire();
      let outcome: ShapingOutcome = 'ignored';
      try {
        const result = await relay.send(message, envelope);
        outcome = shapingOutcomeOf(result);
        return result;
      } finally {
        release(outcome);
      }
    },
    close: () => relay.close(),
  };
}
