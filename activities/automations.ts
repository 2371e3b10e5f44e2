import type { MikroORM } from '@mikro-orm/postgresql';
import type { AutomationInput } from '../workflows/automation.ts';
import type { DrainSummary } from '../workflows/queue-actor.ts';
import type { SendDomainInput } from '../workflows/send-domain.ts';
import type { Config } from '../src/config.ts';
import type { Logger } from '../src/logger.ts';
import type { QueueWakes } from '../src/queue/wakes.ts';
import { createAutomationDrainer } from '../src/modules/automations/automation-drain.ts';
import type { AutomationWaker } from '../src/modules/automations/automation-wake.ts';
import { createRecipientLinks } from '../src/modules/broadcasts/recipient-links.ts';
import { drainContext } from './drain-context.ts';

export interface AutomationActivityDeps {
  orm: MikroORM;
  config: Pick<Config, 'queues' | 'encryptionKey' | 'http'>;
  logger: Logger;
  queueWakes: QueueWakes;
  wakeDomainActors: (domains: SendDomainInput[]) => Promise<void>;
  /** Wakes automations that runs' contact and segment changes triggered. */
  wakeAutomations?: AutomationWaker | undefined;
}

/** drainAutomation is the automation actor's one activity (src/modules/automations/automation-drain.ts). */
export function createAutomationActivities(deps: AutomationActivityDeps) {
  const drainer = createAutomationDrainer({
    orm: deps.orm,
    wakes: deps.queueWakes,
    logger: deps.logger,
    lingerMs: deps.config.queues.drainLingerMs,
    wakeDomainActors: deps.wakeDomainActors,
    wakeAutomations: deps.wakeAutomations,
    links: deps.config.encryptionKey ? createRecipientLinks(deps.config.encryptionKey, deps.config.http.publicUrl) : null,
  });
  return {
    async drainAutomation(input: AutomationInput): Promise<DrainSummary> {
      return drainer.drain(input, drainContext());
    },
  };
}
