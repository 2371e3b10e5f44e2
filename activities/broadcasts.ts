import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { BroadcastSendInput } from '../workflows/broadcasts.ts';
import type { SendDomainInput } from '../workflows/send-domain.ts';
import type { Logger } from '../src/logger.ts';
import { createBroadcastSender } from '../src/modules/broadcasts/broadcast-sender.ts';

export interface BroadcastActivityDeps {
  orm: MikroORM;
  logger: Logger;
  wakeDomainActors: (domains: SendDomainInput[]) => Promise<void>;
}

/** The steps of a broadcast's send (src/modules/broadcasts/broadcast-sender.ts); each idempotent. */
export function createBroadcastActivities(deps: BroadcastActivityDeps) {
  const sender = createBroadcastSender(deps);
  return {
    broadcastState: (input: BroadcastSendInput) => sender.state(input),
    beginBroadcast: (input: BroadcastSendInput) => sender.begin(input),
    async writeBroadcastAudience(input: BroadcastSendInput) {
      const context = Context.current();
      return sender.writeAudience(input, () => context.heartbeat());
    },
    refreshBroadcast: (input: BroadcastSendInput) => sender.refresh(input),
    failBroadcast: (input: BroadcastSendInput & { reason: string }) => sender.fail(input, input.reason),
  };
}
