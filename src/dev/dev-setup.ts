import { join } from 'node:path';
import { createOrm } from '../../db/orm.ts';
import { migrateUp } from '../../db/migrate.ts';
import { checkEncryptionKey } from '../modules/encryption/encryption.service.ts';
import { ConfigError } from '../config.ts';
import type { TemporalAccess } from '../temporal/connection-options.ts';
import { ensureTemporalReady, TemporalSetupError } from '../temporal/search-attribute-registry.ts';
import { waitFor } from './processes.ts';
import { ensureDevWorkspace, type DevWorkspace } from './seed.ts';
import { ensureWorkflowBundle } from './workflow-bundle.ts';
import { createDashboardAuthService } from '../modules/dashboard/dashboard-auth.service.ts';

/**
 * `herald dev-setup` (a child of `herald dev`, so the supervisor never holds the ORM, the
 * Temporal client or webpack): waits for the Temporal namespace and registers the search
 * attributes, migrates, ensures the dev workspace, and bundles the workflow code into the data
 * directory unless a bundle of the same sources is there. Prints one JSON line last.
 */
export interface DevSetupResult {
  workspace: DevWorkspace;
  /** A one-use sign-in link token for the dev workspace's owner (the banner's dashboard link). */
  dashboardSignIn: string;
  applied: string[];
  workflowBundle: string;
}

export async function runDevSetup(options: {
  databaseUrl: string;
  temporal: TemporalAccess;
  namespace: string;
  encryptionKey: string;
  dataDir: string;
}): Promise<void> {
  await waitFor(
    'the Temporal namespace',
    async () => {
      try {
        await ensureTemporalReady(options.temporal, options.namespace);
        return true;
      } catch (error) {
        // An external cluster without the namespace, or a bad TLS file, does not mend by waiting.
        if (error instanceof TemporalSetupError || error instanceof ConfigError) return error;
        return undefined;
      }
    },
    90_000,
    300,
  ).then((outcome) => {
    if (outcome instanceof Error) throw outcome;
  });
  const orm = await createOrm({ databaseUrl: options.databaseUrl });
  let applied: string[];
  let workspace: DevWorkspace;
  let dashboardSignIn: string;
  try {
    applied = await migrateUp(orm);
    await checkEncryptionKey(orm.em.fork(), [Buffer.from(options.encryptionKey, 'base64')]);
    workspace = await ensureDevWorkspace({
      orm,
      encryptionKey: Buffer.from(options.encryptionKey, 'base64'),
      keyFile: join(options.dataDir, 'dev-key'),
    });
    dashboardSignIn = (await createDashboardAuthService({ orm }).signInLink({ orgId: workspace.orgId })).token;
  } finally {
    await orm.close();
  }
  const workflowBundle = await ensureWorkflowBundle(options.dataDir, (message) => process.stderr.write(`${message}\n`));
  const result: DevSetupResult = { workspace, dashboardSignIn, applied, workflowBundle };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}
