import type { MikroORM } from '../../db/orm.ts';
import { createContactsService } from '../../src/modules/contacts/contacts.service.ts';
import { unique } from './factories.ts';

/**
 * For every route with an `:id`: how to create, in a given workspace, the resource the id
 * names, and a body that passes validation. The shared route suite uses it to prove that
 * another workspace's id answers 404; it fails for a route that has no entry here.
 */
export interface ResourceFixture {
  create(orm: MikroORM, orgId: string): Promise<string>;
  validBody?: Record<string, unknown>;
}

const contact: ResourceFixture = {
  create: async (orm, orgId) =>
    (await createContactsService({ orm }).createContact(orgId, { email: `${unique('c')}@example.com`, tags: [], custom_fields: {} })).id,
};

export const RESOURCE_FIXTURES: Record<string, ResourceFixture> = {
  getContact: contact,
};

/** A body that passes validation for routes without an id (for the write-route checks). */
export const VALID_BODIES: Record<string, () => Record<string, unknown>> = {
  createContact: () => ({ email: `${unique('suite')}@example.com` }),
};
