import type { AdaptiveGate, ShapingOutcome } from './adaptive-limit.ts';

/** The parts of a RelayResult (relay.ts) that say how a transaction went; structural, so relay.ts can use this file. */
export type TransactionAnswer =
  | { kind: 'unreachable' }
  | { kind: 'message_refused'; permanent: boolean }
  | { kind: 'recipients'; recipients: readonly { accepted: boolean; code: number | null }[] };

/**
 * What a transaction says about the receiver's capacity: any final answer (accepted, or a
 * permanent refusal, which is about the message, not the load) counts as taken; a temporary
 * refusal of the whole transaction (421 or another 4xx for the message or every recipient) or
 * no answer at all counts as refused for now.
 */
export function shapingOutcomeOf(result: TransactionAnswer): ShapingOutcome {
  if (result.kind === 'unreachable') return 'temporary';
  if (result.kind === 'message_refused') return result.permanent ? 'accepted' : 'temporary';
  const final = result.recipients.some((r) => r.accepted || (r.code ?? 0) >= 500);
  return final || result.recipients.length === 0 ? 'accepted' : 'temporary';
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
