import { execFileSync } from 'node:child_process';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { startApiHarness } from '../support/api.ts';

it('curl', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'curl-'));
  const h = await startApiHarness({ BLOB_DIR: dir });
  const file = join(dir, 'big.pdf');
  await writeFile(file, randomBytes(3_000_000));
  const out = execFileSync('curl', ['-sS', '-X', 'POST', `${h.api.url}/api/v1/outbox/attachments`, '-H', `Authorization: Bearer ${h.workspace.key}`, '-H', 'Content-Type: application/json', '-d', JSON.stringify({ filename: 'big.pdf', content_type: 'application/pdf', size_bytes: 3_000_000 })]).toString();
  const data = JSON.parse(out).data;
  const url = new URL(data.upload_url);
  const put = execFileSync('curl', ['-sS', '-i', '-T', file, '-H', 'Content-Type: application/pdf', `${h.api.url}${url.pathname}${url.search}`]).toString();
  const put2 = execFileSync('curl', ['-sS', '-X', 'PUT', '--data-binary', `@${file}`, '-H', 'Content-Type: application/pdf', `${h.api.url}${url.pathname}${url.search}`]).toString();
  await h.close();
  expect({ put, put2 }).toEqual({});
});
