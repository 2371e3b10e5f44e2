import type { Relay, RelayResult } from '../relay.ts';
import type { AdaptiveGate, ShapingOutcome } from './adaptive-limit.ts';

/**
 * What a transaction says about the receiver's capacity: any final answer (accepted, or a
 * permanent refusal, which is about the message, not the load) counts as taken; a temporary
 * refusal of the whole transaction (421 or another 4xx for the message or every recipient) or
 * no answer at all counts as refused for now.
 */
export function shapingOutcomeOf(result: RelayResult): ShapingOutcome {
  if (result.kind === 'unreachable') return 'temporary';
  if (result.kind === 'message_refused') return result.permanent ? 'accepted' : 'temporary';
  const final = result.recipients.some((r) => r.accepted || (r.code ?? 0) >= 500);
  return final || result.recipients.length === 0 ? 'accepted' : 'temporary';
}

/** `relay` with at most the gate's limit of transactions in flight, the limit moving with the answers. */
export function withAdaptiveConnections(relay: Relay, gate: AdaptiveGate): Relay {
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
