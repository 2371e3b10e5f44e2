import { Domain, EmailRecipient, TransactionalEmail } from '../../db/entities/index.ts';
import { newId } from '../../db/ids.ts';
import type { MikroORM } from '../../db/orm.ts';
import { ALL_TENANTS, scopeToOrg } from '../../db/orm.ts';
import { createDomainsService } from '../../src/modules/domains/domains.service.ts';
import type { CreditTotals } from '../../src/modules/orgs/credits.repo.ts';
import { createOrgsService } from '../../src/modules/orgs/orgs.service.ts';
import { unique } from './factories.ts';
import { TEST_ENCRYPTION_KEY } from './stack.ts';

/** A sending domain of the workspace (verified unless said otherwise), with a real DKIM key pair. */
export async function addSendingDomain(
  orm: MikroORM,
  orgId: string,
  overrides: {
    domain?: string;
    verified?: boolean;
    dailyCap?: number;
    status?: 'pending' | 'verified' | 'attention';
    reputation?: 'healthy' | 'recovery';
    /** Automatic warm-up: off unless a test is about it (a new domain would cap broadcasts at 150 on day 1). */
    warmup?: 'new' | 'existing' | 'off';
  } = {},
): Promise<Domain> {
  const name = overrides.domain ?? `${unique('send').toLowerCase()}.example.com`;
  const domains = createDomainsService({ orm, encryptionKey: Buffer.from(TEST_ENCRYPTION_KEY, 'base64') });
  await domains.addDomain({
    orgId,
    domain: name,
    verified: overrides.verified ?? true,
    warmup: overrides.warmup ?? 'off',
    ...(overrides.dailyCap !== undefined ? { dailyCap: overrides.dailyCap } : {}),
  });
  const em = orm.em.fork();
  const domain = await em.findOneOrFail(Domain, { domain: name, orgId }, ALL_TENANTS);
  if (overrides.status) domain.status = overrides.status;
  if (overrides.reputation) domain.reputationState = overrides.reputation;
  await em.flush();
  return domain;
}

export async function setCredits(orm: MikroORM, orgId: string, credits: number, overage = false): Promise<void> {
  await createOrgsService({ orm }).setCredits(orgId, credits, overage);
}

/** The workspace's credit balance and overage used (summed over its shards). */
export async function creditsOf(orm: MikroORM, orgId: string): Promise<CreditTotals> {
  return createOrgsService({ orm }).credits(orgId);
}

/** A scheduled transactional email row (no workflow), for routes that only need one to exist. */
export async function insertScheduledEmail(orm: MikroORM, orgId: string): Promise<string> {
  const em = scopeToOrg(orm.em, orgId);
  const id = newId();
  em.create(TransactionalEmail, {
    id,
    orgId,
    domainId: newId(),
    domain: 'suite.example.com',
    fromEmail: 'suite@suite.example.com',
    subject: 'Route suite',
    text: 'Hello',
    messageId: `${id}.0@suite.example.com`,
    status: 'scheduled',
    scheduledAt: new Date(Date.now() + 86_400_000),
    quotaDay: new Date().toISOString().slice(0, 10),
    workflowStartedAt: new Date(),
    createdAt: new Date(),
    updatedAt: new Date(),
  });
  em.create(EmailRecipient, { orgId, emailId: id, kind: 'to', email: 'someone@example.com', createdAt: new Date(), updatedAt: new Date() });
  await em.flush();
  return id;
}
