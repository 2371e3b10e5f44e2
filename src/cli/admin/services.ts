import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from '../../config.ts';
import { createApiKeysService } from '../../modules/auth/api-keys.service.ts';
import { createAutomationsAdmin } from '../../modules/automations/automations.admin.ts';
import { createDashboardAuthService } from '../../modules/dashboard/dashboard-auth.service.ts';
import { createDomainsService } from '../../modules/domains/domains.service.ts';
import { createDomainVerificationRunner } from '../../modules/domains/domain-verification.starter.ts';
import { createEncryptionAdmin } from '../../modules/encryption/encryption.admin.ts';
import { createOrgsService } from '../../modules/orgs/orgs.service.ts';
import { createReputationService } from '../../modules/reputation/reputation.service.ts';
import { createTemplatesAdmin } from '../../modules/templates/templates.admin.ts';

export interface AdminDeps {
  orm: MikroORM;
  config: Pick<Config, 'encryptionKey' | 'encryptionKeys' | 'temporal'> & { http: Pick<Config['http'], 'publicUrl'> };
}

/** The services the admin commands call, built once a command runs. */
export function adminServices(deps: AdminDeps) {
  return {
    orgs: createOrgsService(deps),
    keys: createApiKeysService(deps),
    domains: createDomainsService({ orm: deps.orm, encryptionKey: deps.config.encryptionKey }),
    domainVerification: createDomainVerificationRunner(deps),
    automations: createAutomationsAdmin(deps),
    templates: createTemplatesAdmin(deps),
    reputation: createReputationService(deps),
    dashboard: createDashboardAuthService(deps),
    publicUrl: deps.config.http.publicUrl,
    encryption: createEncryptionAdmin({ em: deps.orm.em.fork(), keys: deps.config.encryptionKeys }),
  };
}

export type AdminServices = ReturnType<typeof adminServices>;
