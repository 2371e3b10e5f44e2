import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Contact, ContactImport, ContactImportError } from '../../db/entities/index.ts';
import { scopeToOrg } from '../../db/orm.ts';
import type { BlobStore } from '../../src/blob/blob-store.ts';
import { createFsBlobStore } from '../../src/blob/fs-blob-store.ts';
import { createLogger } from '../../src/logger.ts';
import { IMPORT_LIMITS } from '../../src/modules/contacts/contact-import.fns.ts';
import { createContactImportRunner } from '../../src/modules/contacts/contact-import.runner.ts';
import { createOrg } from '../support/factories.ts';
import { createTestStack, type TestStack } from '../support/stack.ts';

/** A crash after some batches committed: the next run resumes at the checkpoint and counts nothing twice. */
describe('contact import runner (resume after a crash)', () => {
  let stack: TestStack;
  let blobDir: string;
  let blobs: BlobStore;

  beforeAll(async () => {
    stack = await createTestStack();
    blobDir = await mkdtemp(join(tmpdir(), 'herald-import-runner-'));
    blobs = createFsBlobStore(blobDir);
  });

  afterAll(async () => {
    await stack?.close();
    await rm(blobDir, { recursive: true, force: true });
  });

  it('resumes exactly after the last committed batch, with exact rows and lines', async () => {
    const { org } = await createOrg(stack.orm);
    // 2,500 rows over CRLF lines; row 3 spans two lines, row 1,500 and row 2,400 are bad.
    const lines = ['email,first_name'];
    for (let row = 1; row <= 2_500; row += 1) {
      if (row === 3) lines.push('"r3@example.com","two\r\nlines"');
      else if (row === 1_500 || row === 2_400) lines.push(`bad-${row},x`);
      else lines.push(`r${row}@example.com,N${row}`);
    }
    const key = `contact-imports/${org.id}/runner.csv`;
    await blobs.put(key, Buffer.from(`${lines.join('\r\n')}\r\n`));
    const em = scopeToOrg(stack.orm.em.fork(), org.id);
    const contactImport = em.create(ContactImport, {
      orgId: org.id,
      status: 'validating',
      blobKey: key,
      uploadExpiresAt: new Date(Date.now() + 60_000),
    });
    await em.flush();
    const target = { orgId: org.id, importId: contactImport.id };
    const runner = createContactImportRunner({ orm: stack.orm, blobs, logger: createLogger('silent') });

    expect((await runner.validate(target, () => {})).status).toBe('importing');
    // The "worker" dies right after the first batch commits (its heartbeat throws).
    let beats = 0;
    await expect(
      runner.run(target, () => {
        beats += 1;
        if (beats === 1) throw new Error('killed');
      }),
    ).rejects.toThrow('killed');
    const midway = await scopeToOrg(stack.orm.em.fork(), org.id).findOneOrFail(ContactImport, { id: contactImport.id });
    expect(midway).toMatchObject({ status: 'importing', rowsDone: 1_000, created: 1_000, linesDone: 1_002 });

    const done = await runner.run(target, () => {});
    expect(done).toMatchObject({ status: 'completed', rowsDone: 2_500, created: 2_498, updated: 0, unchanged: 0, skipped: 2 });
    const check = scopeToOrg(stack.orm.em.fork(), org.id);
    expect(await check.count(Contact, {})).toBe(2_498);
    expect((await check.findOneOrFail(Contact, { email: 'r3@example.com' })).firstName).toBe('two\r\nlines');
    const errors = await check.find(ContactImportError, { importId: contactImport.id }, { orderBy: { row: 'asc' } });
    // Row n sits on line n + 2 from row 3 on (the header, and row 3's second line).
    expect(errors.map((e) => [e.row, e.line, e.reason])).toEqual([
      [1_500, 1_502, 'INVALID_EMAIL'],
      [2_400, 2_402, 'INVALID_EMAIL'],
    ]);
    expect(await blobs.exists(key)).toBe(false);
    // Running again changes nothing.
    expect(await runner.run(target, () => {})).toMatchObject({ status: 'completed', rowsDone: 2_500, created: 2_498 });
  }, 60_000);

  it('takes a file of exactly the row limit and refuses one row more, importing nothing', async () => {
    const { org } = await createOrg(stack.orm);
    const runner = createContactImportRunner({ orm: stack.orm, blobs, logger: createLogger('silent'), maxRows: 5 });
    async function importRows(count: number) {
      const key = `contact-imports/${org.id}/limit-${count}.csv`;
      const body = ['email', ...Array.from({ length: count }, (_, i) => `limit${count}-${i}@example.com`)].join('\n');
      await blobs.put(key, Buffer.from(body));
      const em = scopeToOrg(stack.orm.em.fork(), org.id);
      const row = em.create(ContactImport, {
        orgId: org.id,
        status: 'validating',
        blobKey: key,
        uploadExpiresAt: new Date(Date.now() + 60_000),
      });
      await em.flush();
      const target = { orgId: org.id, importId: row.id };
      const validated = await runner.validate(target, () => {});
      return validated.status === 'importing' ? runner.run(target, () => {}) : validated;
    }
    expect(await importRows(5)).toMatchObject({ status: 'completed', created: 5 });
    expect(await importRows(6)).toMatchObject({ status: 'failed', rowsDone: 0 });
    const failed = await scopeToOrg(stack.orm.em.fork(), org.id).find(ContactImport, { status: 'failed' });
    expect(failed.map((row) => [row.failure?.reason, row.failure?.line])).toEqual([['TOO_MANY_ROWS', 7]]);
    expect(await scopeToOrg(stack.orm.em.fork(), org.id).count(Contact, { email: { $like: 'limit6-%' } })).toBe(0);
  });

  it('takes a row of exactly the record limit and refuses a file with one character more', async () => {
    const { org } = await createOrg(stack.orm);
    const runner = createContactImportRunner({ orm: stack.orm, blobs, logger: createLogger('silent') });
    async function validate(rowChars: number) {
      const email = `edge${rowChars}@example.com`;
      const key = `contact-imports/${org.id}/record-${rowChars}.csv`;
      // The row's fields hold `rowChars` characters in all.
      await blobs.put(key, Buffer.from(`email,note\n${email},${'x'.repeat(rowChars - email.length)}\n`));
      const em = scopeToOrg(stack.orm.em.fork(), org.id);
      const row = em.create(ContactImport, {
        orgId: org.id,
        status: 'validating',
        blobKey: key,
        uploadExpiresAt: new Date(Date.now() + 60_000),
      });
      await em.flush();
      await runner.validate({ orgId: org.id, importId: row.id }, () => {});
      return scopeToOrg(stack.orm.em.fork(), org.id).findOneOrFail(ContactImport, { id: row.id });
    }
    expect((await validate(IMPORT_LIMITS.maxRecordChars)).status).toBe('importing');
    const over = await validate(IMPORT_LIMITS.maxRecordChars + 1);
    expect(over.status).toBe('failed');
    expect(over.failure).toMatchObject({ reason: 'RECORD_TOO_LARGE', line: 2 });
  });
});
