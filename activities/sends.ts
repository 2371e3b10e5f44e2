import { Context } from '@temporalio/activity';
import { drainContext } from './drain-context.ts';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { DrainSummary } from '../workflows/queue-actor.ts';
import type { SendDomainInput } from '../workflows/send-domain.ts';
import type { BlobStore } from '../src/blob/blob-store.ts';
import type { Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import type { QueueWakes } from '../src/queue/wakes.ts';
import { createEmailDelivery } from '../src/modules/outbound/delivery.ts';
import { createDomainDrainer } from '../src/modules/outbound/domain-drain.ts';
import { createSentRecorder } from '../src/modules/outbound/sent-recorder.ts';
import { createRelay, type Relay } from '../src/modules/outbound/relay.ts';
import { createWorkerSandboxRelay } from '../src/modules/sandbox/sandbox-relay.ts';
import type { Egress } from '../src/modules/egress/egress.ts';

export interface SendActivityDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  config: Pick<
    Config,
    'bounceDomain' | 'encryptionKey' | 'encryptionKeys' | 'sends' | 'queues' | 'relayUrl' | 'relayTls' | 'http' | 'sandboxRelay'
  >;
  logger: Logger;
  queueWakes: QueueWakes;
  /** The worker's relay connection pool; built from SMTP_RELAY_URL when absent. */
  relay?: Relay;
  /** Where test keys' mail goes (src/modules/sandbox/); built from the configuration when absent. */
  sandboxRelay?: Relay;
  /** Egress IP pools (src/modules/egress/); none: every delivery takes the default route. */
  egress?: Egress | null;
}

/**
 * Transactional send activities. drainSendDomain is the sending-domain actor's one activity: it
 * claims the domain's due emails and makes one delivery attempt each through the pooled relay
 * (src/modules/outbound/domain-drain.ts), heartbeating while it works.
 */
export function createSendActivities(deps: SendActivityDeps) {
  const relay =
    deps.relay ??
    createRelay({
      url: deps.config.relayUrl,
      poolSize: deps.config.sends.relayPoolSize,
      maxConnections: deps.config.sends.relayMaxConnections,
      tls: deps.config.relayTls,
      logger: deps.logger,
    });
  const delivery = createEmailDelivery({
    orm: deps.orm,
    blobs: deps.blobs,
    relay,
    sandboxRelay: deps.sandboxRelay ?? createWorkerSandboxRelay(deps),
    config: deps.config,
    heartbeat: () => {
      try {
        Context.current().heartbeat();
      } catch {
        // Outside an activity context (a drain's attempt after its activity returned): nothing to beat.
      }
    },
    recorder: createSentRecorder({ orm: deps.orm }),
    egress: deps.egress ?? null,
  });
  const drainer = createDomainDrainer({ orm: deps.orm, config: deps.config, delivery, wakes: deps.queueWakes, logger: deps.logger });
  return {
    async drainSendDomain(input: SendDomainInput): Promise<DrainSummary> {
      return drainer.drain(input, drainContext());
    },
  };
}

export type SendActivities = ReturnType<typeof createSendActivities>;
