import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, ContactImportMember } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { findContactTimeline } from '../../src/modules/contacts/contact-timeline.repo.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';
import { runContactImport } from '../support/contact-imports.ts';

/** The imports that touched a contact, recorded per contact with what each did, and shown on its timeline. */
describe('contact imports on the contact timeline', () => {
  let stack: TestStack;
  let blobDir: string;
  let blobs: BlobStore;

  beforeAll(async () => {
    stack = await createTestStack();
    blobDir = await mkdtemp(join(tmpdir(), 'herald-import-timeline-'));
    blobs = createFsBlobStore(blobDir);
  });
  afterAll(async () => {
    await stack?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  async function runImport(orgId: string, filename: string, csv: string): Promise<string> {
    const { importId, validated, ran } = await runContactImport({ orm: stack.orm, blobs, orgId, csv, filename });
    expect(validated.status).toBe('importing');
    expect(ran.status).toBe('completed');
    return importId;
  }

  it('records created, updated and unchanged per contact and import, and lists them newest first', async () => {
    const { org } = await createOrg(stack.orm);
    const first = await runImport(org.id, 'first.csv', 'email,first_name\nann@example.com,Ann\nbob@example.com,Bob\n');
    const second = await runImport(org.id, 'second.csv', 'email,first_name\nann@example.com,Annie\nbob@example.com,Bob\n');
    const em = scopeToOrg(stack.orm.em.fork(), org.id);
    const members = await em.find(ContactImportMember, {}, { orderBy: { createdAt: 'asc' } });
    const ann = await em.findOneOrFail(Contact, { email: 'ann@example.com' });
    const bob = await em.findOneOrFail(Contact, { email: 'bob@example.com' });
    const outcome = (contactId: string, importId: string) =>
      members.find((m) => m.contactId === contactId && m.importId === importId)?.outcome;
    expect([outcome(ann.id, first), outcome(bob.id, first), outcome(ann.id, second), outcome(bob.id, second)]).toEqual([
      'created',
      'created',
      'updated',
      'unchanged',
    ]);
    const timeline = await findContactTimeline(stack.orm.em.fork(), org.id, ann);
    expect(timeline.filter((e) => e.kind === 'import').map((e) => [e.label, e.title, e.href])).toEqual([
      ['updated', 'second.csv', `/dashboard/contacts/imports/${second}`],
      ['created', 'first.csv', `/dashboard/contacts/imports/${first}`],
    ]);

    // Another workspace's timeline for a contact id of this one shows none of it.
    const { org: other } = await createOrg(stack.orm);
    expect((await findContactTimeline(stack.orm.em.fork(), other.id, ann)).filter((e) => e.kind === 'import')).toEqual([]);
  }, 60_000);
});
