import { randomBytes } from 'node:crypto';
import { createOrm } from '../../db/orm.ts';
import { startMailSink } from '../../src/dev/mail-sink.ts';
import { createLogger } from '../../src/logger.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import { createOrgsService } from '../../src/modules/orgs/orgs.service.ts';
import type { BenchContext } from './context.ts';

/**
 * What a sending benchmark starts from: the dev mail sink as the relay, the run's database, a
 * workspace with a verified sending domain and credits for any run, and an ORM on the database
 * (closed with the context).
 */
export async function sendingWorkspace(context: BenchContext) {
  const sink = await startMailSink({ smtpPort: 0, feedback: null, logger: createLogger('silent') });
  context.defer(() => sink.close());
  const databaseUrl = await context.database();
  const workspace = await context.workspace(databaseUrl, { mode: 'live' });
  const orm = await createOrm({ databaseUrl, poolMax: 2 });
  context.defer(() => orm.close());
  const domain = `bench-${randomBytes(3).toString('hex')}.example.com`;
  await createDomainsService({ orm, encryptionKey: Buffer.from(context.services.encryptionKey, 'base64') }).addDomain({
    orgId: workspace.orgId,
    domain,
    verified: true,
    // Benchmarks measure throughput at full volume, not a warm-up day's cap.
    warmup: 'off',
  });
  await createOrgsService({ orm }).setCredits(workspace.orgId, 100_000_000);
  return { sink, databaseUrl, workspace, orm, domain };
}
