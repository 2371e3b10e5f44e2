import type { MikroORM } from '../../db/orm.ts';
import { createApiKeysService, type CreateApiKeyInput } from '../../src/modules/auth/api-keys.service.ts';
import { createOrgsService } from '../../src/modules/orgs/orgs.service.ts';

let sequence = 0;
/** A value unique within the test run. */
export function unique(prefix: string): string {
  sequence += 1;
  return `${prefix}-${process.pid}-${sequence}-${Math.random().toString(36).slice(2, 7)}`;
}

export async function createOrg(orm: MikroORM, overrides: { name?: string; credits?: number } = {}) {
  const name = overrides.name ?? unique('Org');
  return createOrgsService({ orm }).createOrganization({ name, ...overrides });
}

/** A workspace with one key; `scopes` defaults to every public scope. */
export async function createOrgWithKey(orm: MikroORM, overrides: Partial<Omit<CreateApiKeyInput, 'orgId'>> = {}) {
  const { org, owner } = await createOrg(orm);
  const { apiKey, key } = await createApiKeysService({ orm }).createApiKey({
    orgId: org.id,
    scopes: overrides.scopes ?? ['all'],
    ...overrides,
  });
  return { org, owner, apiKey, key };
}
