import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { BlobStore } from '../src/blob/blob-store.ts';
import type { Config } from '../src/config.ts';
import { createEmailDelivery, type DeliverResult } from '../src/modules/sends/delivery.ts';
import { createRelay, type Relay } from '../src/modules/sends/relay.ts';

export interface SendActivityDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  config: Pick<Config, 'bounceDomain' | 'encryptionKey' | 'sends' | 'relayUrl'>;
  /** The worker's relay connection pool; built from SMTP_RELAY_URL when absent. */
  relay?: Relay;
}

/**
 * Transactional send activities (workflows/sends.ts). deliverEmail makes one attempt for the
 * recipients not yet settled and records every answer before returning (it heartbeats while
 * the relay conversation runs when scheduled as a regular activity). expireEmail fails what is still deferred when the retry window
 * closes. Both are idempotent: a retry finds recorded recipients settled.
 */
export function createSendActivities(deps: SendActivityDeps) {
  const relay = deps.relay ?? createRelay({ url: deps.config.relayUrl, poolSize: deps.config.sends.relayPoolSize });
  const delivery = createEmailDelivery({
    orm: deps.orm,
    blobs: deps.blobs,
    relay,
    config: deps.config,
    heartbeat: () => {
      // Scheduled as local activities by sendEmail (no heartbeats); as regular ones, they beat.
      let context: Context;
      try {
        context = Context.current();
      } catch {
        return;
      }
      if (!context.info.isLocal) context.heartbeat();
    },
  });
  return {
    async deliverEmail(input: { orgId: string; emailId: string; attempt: number; nextDelayMs: number | null }): Promise<DeliverResult> {
      return delivery.deliver(input);
    },
    async expireEmail(input: { orgId: string; emailId: string }) {
      return delivery.expire(input);
    },
  };
}

export type SendActivities = ReturnType<typeof createSendActivities>;
