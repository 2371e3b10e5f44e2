import { Context } from '@temporalio/activity';
import type { MikroORM } from '@mikro-orm/postgresql';
import type { ContactImportInput } from '../workflows/contact-imports.ts';
import type { BlobStore } from '../src/blob/blob-store.ts';
import type { Logger } from '../src/logger.ts';
import { createContactImportRunner } from '../src/modules/contacts/contact-import.runner.ts';
import type { AutomationWaker } from '../src/modules/automations/automation-wake.ts';

export interface ContactImportActivityDeps {
  orm: MikroORM;
  blobs: BlobStore | null;
  logger: Logger;
  /** Wakes the automations an imported batch gave runs. */
  wakeAutomations?: AutomationWaker | undefined;
}

/** The passes of a contact import; each is idempotent and resumes from the import's committed state. */
export function createContactImportActivities({ orm, blobs, logger, wakeAutomations }: ContactImportActivityDeps) {
  const runner = createContactImportRunner({ orm, blobs, logger, wakeAutomations });
  const heartbeat = (details: unknown) => Context.current().heartbeat(details);
  return {
    async validateContactImport(input: ContactImportInput) {
      return runner.validate(input, heartbeat);
    },
    async runContactImport(input: ContactImportInput) {
      return runner.run(input, heartbeat);
    },
    async giveUpContactImport(input: ContactImportInput & { message: string }) {
      return runner.giveUp(input, input.message);
    },
  };
}
