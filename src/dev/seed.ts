import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import type { MikroORM } from '@mikro-orm/postgresql';
import { ApiKey, Domain, SenderIdentity } from '../../db/entities/index.ts';
import { ALL_TENANTS } from '../../db/orm.ts';
import { apiKeyMatches, parseApiKey } from '../modules/auth/api-key.fns.ts';
import { createApiKeysService } from '../modules/auth/api-keys.service.ts';
import { createDomainsService } from '../modules/domains/domains.service.ts';
import { createOrgsService } from '../modules/orgs/orgs.service.ts';

export const DEV_ORG_SLUG = 'dev';
export const DEV_DOMAIN = 'dev.herald.localhost';
export const DEV_SENDER = `hello@${DEV_DOMAIN}`;

export interface DevWorkspace {
  orgId: string;
  domain: string;
  sender: string;
  key: string;
  created: boolean;
}

async function storedKeyIsValid(orm: MikroORM, key: string): Promise<boolean> {
  const parsed = parseApiKey(key);
  if (!parsed) return false;
  const row = await orm.em.fork().findOne(ApiKey, { prefix: parsed.prefix }, ALL_TENANTS);
  return !!row && !row.revokedAt && apiKeyMatches(key, row.secretHash);
}

/**
 * Creates, once, the dev workspace: a verified default domain, a default sender and an
 * all-scopes test key. The key's secret is kept in `keyFile` (mode 0600, under .data/) so
 * later starts can print it again; a missing or revoked key is replaced.
 */
export async function ensureDevWorkspace(options: { orm: MikroORM; encryptionKey: Buffer; keyFile: string }): Promise<DevWorkspace> {
  const { orm } = options;
  const orgs = createOrgsService({ orm });
  const domains = createDomainsService({ orm, encryptionKey: options.encryptionKey });
  const keys = createApiKeysService({ orm });

  let created = false;
  let org = await orgs.findBySlug(DEV_ORG_SLUG);
  if (!org) {
    org = (await orgs.createOrganization({ name: 'Herald Dev', slug: DEV_ORG_SLUG, credits: 10_000 })).org;
    created = true;
  }
  const em = orm.em.fork();
  let domain = await em.findOne(Domain, { domain: DEV_DOMAIN, orgId: org.id }, ALL_TENANTS);
  if (!domain) {
    domain = await domains.addDomain({ orgId: org.id, domain: DEV_DOMAIN, verified: true, isDefault: true, source: 'dev' });
  }
  const sender = await em.findOne(SenderIdentity, { email: DEV_SENDER }, ALL_TENANTS);
  if (!sender) {
    await domains.addSender({ domainId: domain.id, email: DEV_SENDER, name: 'Herald Dev', isDefault: true });
  }
  let key = existsSync(options.keyFile) ? readFileSync(options.keyFile, 'utf8').trim() : '';
  if (!key || !(await storedKeyIsValid(orm, key))) {
    key = (await keys.createApiKey({ orgId: org.id, scopes: ['all'], mode: 'test', name: 'dev key (all scopes)' })).key;
    writeFileSync(options.keyFile, key + '\n', { mode: 0o600 });
  }
  return { orgId: org.id, domain: DEV_DOMAIN, sender: DEV_SENDER, key, created };
}
